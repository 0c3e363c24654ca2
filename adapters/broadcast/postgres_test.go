package broadcast_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadengine/engine/adapters/broadcast"
	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/ports"
)

// openReplicas opens n broadcasts on one database schema, as n replicas
// would, and waits until their listening connections are up.
func openReplicas(t *testing.T, n int) []*broadcast.Postgres {
	t.Helper()
	return openReplicasAt(t, sqldbtest.URL(t, sqldb.Postgres), n)
}

func openReplicasAt(t *testing.T, u string, n int) []*broadcast.Postgres {
	t.Helper()
	db, err := sqldb.Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var out []*broadcast.Postgres
	for range n {
		b, err := broadcast.NewPostgres(context.Background(), db, u, slog.Default())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		out = append(out, b)
	}
	// Every replica hears a wake-up once its listener is connected.
	heard := make([]atomic.Bool, n)
	for i, b := range out {
		b.Listen("probe", func(string) { heard[i].Store(true) })
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if err := out[0].Publish(context.Background(), "probe", ""); err != nil {
			t.Fatal(err)
		}
		all := true
		for i := range heard {
			all = all && heard[i].Load()
		}
		if all {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatal("listeners never connected")
		}
	}
}

// Publish on the identity channel returns only after every replica's
// listener ran, however slow, so a client told "revoked" cannot reach a
// replica that has not dropped its cache yet; a replica that does not
// listen on the channel acknowledges at once; a wake-up does not wait.
func TestConfirmedPublishWaitsForEveryReplica(t *testing.T) {
	rs := openReplicas(t, 3)
	// A listener that acknowledges late is waited for, and one that never
	// will is not, whatever the machine's speed: with an hour to wait,
	// returning at all shows Publish did not wait for the missing one.
	for _, b := range rs {
		broadcast.SetConfirmWait(b, time.Hour)
	}
	var ran [2]atomic.Int64 // when the listener of replica 2 and 3 finished
	for i, b := range rs[1:] {
		b.Listen(ports.ChannelIdentity, func(string) {
			time.Sleep(150 * time.Millisecond)
			ran[i].Store(time.Now().UnixNano())
		})
	}
	// Replica 1 (the publisher) does not listen on the identity channel.
	t0 := time.Now()
	returns(t, "a confirmed Publish (replica 1 does not listen)", func() error {
		return rs[0].Publish(context.Background(), ports.ChannelIdentity, "p1")
	})
	back := time.Now()
	for i := range ran {
		if r := ran[i].Load(); r == 0 || r > back.UnixNano() {
			t.Fatalf("Publish returned (after %v) before replica %d's listener finished", back.Sub(t0), i+2)
		}
	}

	// The listener never returns until the wake-up's Publish has: waiting
	// for it would never end.
	slow := make(chan struct{})
	rs[1].Listen(ports.ChannelNotifications, func(string) { <-slow })
	returns(t, "a wake-up whose listener is stuck", func() error {
		return rs[0].Publish(context.Background(), ports.ChannelNotifications, "")
	})
	close(slow)
}

// returns fails when publish has not returned within a minute: it waits
// for something that never comes (the minute only turns that hang into a
// failure; it is no speed requirement).
func returns(t *testing.T, what string, publish func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- publish() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("%s did not return: it waits for an acknowledgement that never comes", what)
	}
}

// Another installation on the same PostgreSQL server, in another database
// whose schema has the same name, is not one of this installation's
// replicas: NOTIFY does not cross databases, so waiting for its
// acknowledgement would hold every credential change for the whole
// confirmWait.
func TestConfirmedPublishIgnoresInstallationsInOtherDatabases(t *testing.T) {
	u := sqldbtest.URL(t, sqldb.Postgres)
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sqlx.Open("postgres", u)
	if err != nil {
		t.Fatal(err)
	}
	other := fmt.Sprintf("bc_%d", time.Now().UnixNano())
	if _, err := admin.Exec("CREATE DATABASE " + other); err != nil {
		admin.Close()
		t.Fatal(err)
	}
	// Runs after the other installation's connections are closed (cleanups
	// run last first); admin stays open until then.
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP DATABASE " + other + " WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", other, err)
		}
		admin.Close()
	})
	otherURL := *pu
	otherURL.Path = "/" + other
	schema := pu.Query().Get("search_path")
	o, err := sqlx.Open("postgres", otherURL.String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatal(err)
	}
	o.Close()
	openReplicasAt(t, otherURL.String(), 1) // the other installation, listening
	rs := openReplicasAt(t, u, 2)
	for _, b := range rs {
		broadcast.SetConfirmWait(b, time.Hour)
	}
	returns(t, "a confirmed Publish beside a listener of another database", func() error {
		return rs[0].Publish(context.Background(), ports.ChannelIdentity, "p")
	})
}
