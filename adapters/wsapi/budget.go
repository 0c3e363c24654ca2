package wsapi

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/threadengine/engine/adapters/limits"
)

// byteBudget counts bytes held against a cap; takers wait for room. A taker
// finding the budget empty always gets its bytes, so one item larger than
// the cap is never refused outright (it waits for the others instead).
type byteBudget struct {
	name    limits.Budget
	counter *limits.Counter
	max     int64

	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed and replaced whenever bytes are given back
}

func newByteBudget(name limits.Budget, counter *limits.Counter, max int64) *byteBudget {
	return &byteBudget{name: name, counter: counter, max: max, freed: make(chan struct{})}
}

// take takes n bytes, waiting while they do not fit; false when ctx ended
// first (nothing taken).
func (b *byteBudget) take(ctx context.Context, n int64) bool {
	for {
		b.mu.Lock()
		if b.used == 0 || b.used+n <= b.max {
			b.used += n
			total := b.used
			b.mu.Unlock()
			b.counter.Held(b.name, n, total)
			return true
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return false
		}
	}
}

// tryTake takes n bytes if they fit now.
func (b *byteBudget) tryTake(n int64) bool {
	b.mu.Lock()
	if b.used != 0 && b.used+n > b.max {
		b.mu.Unlock()
		return false
	}
	b.used += n
	total := b.used
	b.mu.Unlock()
	b.counter.Held(b.name, n, total)
	return true
}

// held is the bytes taken and not given back.
func (b *byteBudget) held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

func (b *byteBudget) give(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	total := b.used
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
	b.counter.Held(b.name, -n, total)
}

// pendingWait is how long a socket may wait for room in the frame budgets
// (its principal's share, then the engine's) before it is closed: frames
// being handled free their bytes in milliseconds, so a longer wait means
// the room is held by messages that do not finish.
const pendingWait = 5 * time.Second

var (
	errPendingShare   = errors.New("this principal's sockets hold too many bytes of unfinished or unhandled frames")
	errFramesInFlight = errors.New("the engine holds its whole frame budget")
)

// frameHold is what one frame being read or handled holds from the
// principal's share (nil before connect) and the engine's frame budget.
type frameHold struct {
	share, global   *byteBudget
	shareN, globalN int64
}

// grow takes n more bytes from both budgets, waiting up to pendingWait.
func (h *frameHold) grow(ctx context.Context, n int64) error {
	wctx, cancel := context.WithTimeout(ctx, pendingWait)
	defer cancel()
	if h.share != nil {
		if !h.share.take(wctx, n) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return errPendingShare
		}
		h.shareN += n
	}
	if !h.global.take(wctx, n) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errFramesInFlight
	}
	h.globalN += n
	return nil
}

func (h *frameHold) release() {
	if h.share != nil {
		h.share.give(h.shareN)
	}
	h.global.give(h.globalN)
	h.shareN, h.globalN = 0, 0
}

// firstChunk is the buffer a frame starts with; it doubles as the frame
// arrives.
const firstChunk = 4 << 10

// readFrame reads one message of at most limit bytes into a buffer whose
// every growth is paid from the budgets before the bytes are read, so a
// fragmented message that never finishes holds only what it paid for, and
// a whole frame at most limit bytes (so max_reading_per_principal frames
// of the largest size fit the principal's share, and its readers never
// wait on each other). For a message over limit, over is the first byte
// past it (the caller drains the rest). The hold is released by the caller
// once the frame is handled (on error it is already released).
func (s *session) readFrame(r io.Reader, limit int) (data, over []byte, hold *frameHold, err error) {
	hold = &frameHold{global: s.h.frameBudget()}
	if sh := s.share.Load(); sh != nil {
		hold.share = sh.pending
	}
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= limit {
				// Full: one more byte means the message is over the limit.
				one := make([]byte, 1)
				n, err := io.ReadFull(r, one)
				if n == 0 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
					return buf, nil, hold, nil
				}
				if err != nil {
					hold.release()
					return nil, nil, nil, err
				}
				return buf, one, hold, nil
			}
			next := min(max(2*cap(buf), firstChunk), limit)
			if err := hold.grow(s.ctx, int64(next-cap(buf))); err != nil {
				hold.release()
				return nil, nil, nil, err
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil, hold, nil
		}
		if err != nil {
			hold.release()
			return nil, nil, nil, err
		}
	}
}
