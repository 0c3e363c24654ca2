package broadcast

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
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

// confirmWait bounds how long Publish on a confirmed channel waits for the
// other replicas (a replica whose listener is connected but stuck costs
// its callers this much, never more). Tests lengthen it (SetConfirmWait)
// so that "did not wait for an acknowledgement that never comes" is shown
// by Publish returning at all, not by how fast.
const confirmWait = time.Second

// Postgres broadcasts with LISTEN/NOTIFY on one dedicated connection per
// process. Channel names carry the schema, so installations (or tests)
// sharing one PostgreSQL database in different schemas do not hear each
// other.
//
// A confirmed channel (ports.Confirmed) is acknowledged: every process
// that hears a message on it answers on the "ack" channel once its
// listeners have run, and Publish waits for as many answers as there are
// listening connections of this installation (counted in pg_stat_activity
// by their database and application_name), so the caller's "done" comes after every
// replica acted on the message.
type Postgres struct {
	db       *sqldb.DB
	listener *pq.Listener
	prefix   string
	appName  string // application_name prefix of this installation's listening connections
	sender   string // this process
	seq      atomic.Uint64
	log      *slog.Logger
	confirm  time.Duration // confirmWait, unless a test set it

	mu       sync.Mutex
	channels map[string][]chan message // by full channel name
	pending  map[string]*confirmation  // by message id
	done     chan struct{}
}

type message struct{ id, payload string }

// confirmation collects the processes that acknowledged one message.
type confirmation struct {
	from map[string]bool
	more chan struct{} // signalled at every acknowledgement
}

var _ ports.Broadcast = (*Postgres)(nil)

// NewPostgres opens the listening connection (dsn as in database.url).
func NewPostgres(ctx context.Context, db *sqldb.DB, dsn string, log *slog.Logger) (*Postgres, error) {
	var schema string
	if err := db.GetContext(ctx, &schema, `SELECT current_schema()`); err != nil {
		return nil, fmt.Errorf("broadcast: %w", err)
	}
	prefix := channelPrefix(schema)
	sum := sha256.Sum256([]byte(prefix))
	b := &Postgres{db: db, prefix: prefix, appName: "te-listen-" + hex.EncodeToString(sum[:6]) + "-",
		sender: uuid.NewString()[:8], log: log, confirm: confirmWait,
		channels: map[string][]chan message{}, pending: map[string]*confirmation{}, done: make(chan struct{})}
	listenDSN, err := withApplicationName(dsn, b.appName+b.sender)
	if err != nil {
		return nil, fmt.Errorf("broadcast: %w", err)
	}
	b.listener = pq.NewListener(listenDSN, 10*time.Millisecond, 2*time.Second, func(ev pq.ListenerEventType, err error) {
		if err != nil && ev != pq.ListenerEventConnected {
			log.Warn("broadcast: listener connection", "event", ev, "err", err)
		}
	})
	// Confirmed channels are heard (and acknowledged) even by a process
	// that registers no listener for them.
	for _, name := range append([]string{b.ackChannel()}, prefixed(prefix, ports.ConfirmedChannels)...) {
		if err := b.listener.Listen(name); err != nil && err != pq.ErrChannelAlreadyOpen {
			log.Error("broadcast: listen", "channel", name, "err", err)
		}
	}
	go b.dispatch()
	return b, nil
}

func (b *Postgres) ackChannel() string { return b.prefix + "ack" }

// channelPrefix is "threadengine_<schema>_", or with a hash of the schema
// when a channel name would pass PostgreSQL's 63 bytes (pg_notify refuses
// longer names and LISTEN cuts them, so the two would not meet).
func channelPrefix(schema string) string {
	const longest = len(ports.ChannelNotifications) // the longest channel
	if p := "threadengine_" + schema + "_"; len(p)+longest <= 63 {
		return p
	}
	sum := sha256.Sum256([]byte(schema))
	return "threadengine_" + hex.EncodeToString(sum[:8]) + "_"
}

func prefixed(prefix string, channels []string) []string {
	out := make([]string, len(channels))
	for i, c := range channels {
		out[i] = prefix + c
	}
	return out
}

// withApplicationName names the listening connection, in a URL or in a
// key=value connection string.
func withApplicationName(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", err
		}
		q := u.Query()
		q.Set("application_name", name)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return dsn + " application_name=" + name, nil
}

// Listen: see ports.Broadcast.
func (b *Postgres) Listen(channel string, fn func(string)) {
	name := b.prefix + channel
	ch := make(chan message, 1024)
	b.mu.Lock()
	first := len(b.channels[name]) == 0
	b.channels[name] = append(b.channels[name], ch)
	b.mu.Unlock()
	if first {
		if err := b.listener.Listen(name); err != nil && err != pq.ErrChannelAlreadyOpen {
			b.log.Error("broadcast: listen", "channel", name, "err", err)
		}
	}
	confirmed := ports.Confirmed(channel)
	go func() {
		for m := range ch {
			fn(m.payload)
			if confirmed && m.id != "" {
				b.acknowledge(m.id)
			}
		}
	}()
}

// acknowledge tells the publisher of message id that this process acted on
// it.
func (b *Postgres) acknowledge(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), b.confirm)
	defer cancel()
	if _, err := b.db.ExecContext(ctx, `SELECT pg_notify($1, $2)`, b.ackChannel(), id+"|"+b.sender); err != nil {
		select {
		case <-b.done:
		default:
			b.log.Warn("broadcast: acknowledgement not sent", "err", err)
		}
	}
}

// Publish sends payload with pg_notify (delivered when the sending
// transaction commits; here, at once). On a confirmed channel it then
// waits, up to confirmWait, until every listening process of this
// installation, this one included, has acknowledged it.
func (b *Postgres) Publish(ctx context.Context, channel, payload string) error {
	id := b.sender + "." + strconv.FormatUint(b.seq.Add(1), 36)
	name := b.prefix + channel
	var c *confirmation
	if ports.Confirmed(channel) {
		c = &confirmation{from: map[string]bool{}, more: make(chan struct{}, 1)}
		b.mu.Lock()
		b.pending[id] = c
		b.mu.Unlock()
		defer b.forget(id)
	}
	if _, err := b.db.ExecContext(ctx, `SELECT pg_notify($1, $2)`, name, id+"|"+payload); err != nil || c == nil {
		return err
	}
	var listeners int
	// pg_stat_activity lists the whole server; NOTIFY reaches only this
	// database, so an installation in another one never answers.
	if err := b.db.GetContext(ctx, &listeners, `SELECT count(*) FROM pg_stat_activity
 WHERE datname = current_database() AND application_name LIKE $1`, b.appName+"%"); err != nil {
		return err
	}
	t := time.NewTimer(b.confirm)
	defer t.Stop()
	for {
		b.mu.Lock()
		n := len(c.from)
		b.mu.Unlock()
		if n >= listeners {
			return nil
		}
		select {
		case <-c.more:
		case <-t.C:
			b.log.Warn("broadcast: not every replica acknowledged in time", "channel", channel, "acknowledged", n, "listening", listeners)
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

func (b *Postgres) forget(id string) {
	b.mu.Lock()
	delete(b.pending, id)
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
						deliver(ch, message{payload: ports.Resync})
					}
				}
				b.mu.Unlock()
				continue
			}
			id, payload, _ := strings.Cut(n.Extra, "|")
			if n.Channel == b.ackChannel() {
				b.mu.Lock()
				if c, ok := b.pending[id]; ok {
					c.from[payload] = true
					select {
					case c.more <- struct{}{}:
					default:
					}
				}
				b.mu.Unlock()
				continue
			}
			b.mu.Lock()
			chs := b.channels[n.Channel]
			for _, ch := range chs {
				deliver(ch, message{id: id, payload: payload})
			}
			b.mu.Unlock()
			// A confirmed message nobody here listens to is acknowledged
			// at once, so its publisher does not wait for this process.
			if len(chs) == 0 && ports.Confirmed(strings.TrimPrefix(n.Channel, b.prefix)) {
				go b.acknowledge(id)
			}
		}
	}
}

// deliver queues m; a listener far behind gets a resync instead.
func deliver(ch chan message, m message) {
	select {
	case ch <- m:
	default:
		select {
		case ch <- message{payload: ports.Resync}:
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
	b.channels = map[string][]chan message{}
	b.mu.Unlock()
	return err
}
