package broadcast

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/ports"
)

// Postgres broadcasts with LISTEN/NOTIFY on one dedicated connection per
// process. Channel names carry the schema, so installations (or tests)
// sharing one PostgreSQL database in different schemas do not hear each
// other.
type Postgres struct {
	db       *sqldb.DB
	listener *pq.Listener
	prefix   string
	sender   string // this process, so Publish can wait for its own echo
	seq      atomic.Uint64
	log      *slog.Logger

	mu       sync.Mutex
	channels map[string][]chan string // by full channel name
	echoes   map[string]chan struct{}
	done     chan struct{}
}

var _ ports.Broadcast = (*Postgres)(nil)

// NewPostgres opens the listening connection (dsn as in database.url).
func NewPostgres(ctx context.Context, db *sqldb.DB, dsn string, log *slog.Logger) (*Postgres, error) {
	var schema string
	if err := db.GetContext(ctx, &schema, `SELECT current_schema()`); err != nil {
		return nil, fmt.Errorf("broadcast: %w", err)
	}
	b := &Postgres{db: db, prefix: "threadengine_" + schema + "_", sender: uuid.NewString()[:8], log: log,
		channels: map[string][]chan string{}, echoes: map[string]chan struct{}{}, done: make(chan struct{})}
	b.listener = pq.NewListener(dsn, 10*time.Millisecond, 2*time.Second, func(ev pq.ListenerEventType, err error) {
		if err != nil && ev != pq.ListenerEventConnected {
			log.Warn("broadcast: listener connection", "event", ev, "err", err)
		}
	})
	go b.dispatch()
	return b, nil
}

// Listen: see ports.Broadcast.
func (b *Postgres) Listen(channel string, fn func(string)) {
	name := b.prefix + channel
	ch := make(chan string, 1024)
	b.mu.Lock()
	first := len(b.channels[name]) == 0
	b.channels[name] = append(b.channels[name], ch)
	b.mu.Unlock()
	if first {
		if err := b.listener.Listen(name); err != nil && err != pq.ErrChannelAlreadyOpen {
			b.log.Error("broadcast: listen", "channel", name, "err", err)
		}
	}
	go func() {
		for p := range ch {
			fn(p)
		}
	}()
}

// Publish sends payload with pg_notify (delivered when the sending
// transaction commits; here, at once) and waits, up to a second, until this
// process has heard it back: by then PostgreSQL has handed it to every
// listening replica, so a client told "done" does not outrun the message.
func (b *Postgres) Publish(ctx context.Context, channel, payload string) error {
	id := b.sender + "." + strconv.FormatUint(b.seq.Add(1), 36)
	name := b.prefix + channel
	b.mu.Lock()
	listening := len(b.channels[name]) > 0
	var echo chan struct{}
	if listening {
		echo = make(chan struct{})
		b.echoes[id] = echo
	}
	b.mu.Unlock()
	_, err := b.db.ExecContext(ctx, `SELECT pg_notify($1, $2)`, name, id+"|"+payload)
	if err != nil || echo == nil {
		b.forget(id)
		return err
	}
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-echo:
	case <-t.C:
		b.forget(id)
	case <-ctx.Done():
		b.forget(id)
	}
	return nil
}

func (b *Postgres) forget(id string) {
	b.mu.Lock()
	delete(b.echoes, id)
	b.mu.Unlock()
}

func (b *Postgres) dispatch() {
	for {
		select {
		case <-b.done:
			return
		case n, ok := <-b.listener.Notify:
			if !ok {
				return
			}
			if n == nil { // reconnected: messages may have been lost
				b.mu.Lock()
				for _, chs := range b.channels {
					for _, ch := range chs {
						deliver(ch, ports.Resync)
					}
				}
				b.mu.Unlock()
				continue
			}
			id, payload, _ := strings.Cut(n.Extra, "|")
			b.mu.Lock()
			for _, ch := range b.channels[n.Channel] {
				deliver(ch, payload)
			}
			if echo, ok := b.echoes[id]; ok {
				delete(b.echoes, id)
				close(echo)
			}
			b.mu.Unlock()
		}
	}
}

// deliver queues p; a listener far behind gets a resync instead.
func deliver(ch chan string, p string) {
	select {
	case ch <- p:
	default:
		select {
		case ch <- ports.Resync:
		default:
		}
	}
}

// Close stops listening.
func (b *Postgres) Close() error {
	close(b.done)
	err := b.listener.Close()
	b.mu.Lock()
	for _, chs := range b.channels {
		for _, ch := range chs {
			close(ch)
		}
	}
	b.channels = map[string][]chan string{}
	b.mu.Unlock()
	return err
}
