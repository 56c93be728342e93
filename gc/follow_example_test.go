package gc_test

import (
	"context"
	"fmt"

	"github.com/gcscope/gcscope/gc"
)

// A reader that keeps no state of its own, as the stream's hub: it starts at the feed's
// newest event and, when it falls behind the ring, tells its clients to resync and goes
// on from the newest again. A reader that keeps a state (a Replica, the plugin's tracker)
// returns from Resync the Seq of the Snapshot it rebuilt it from.
func ExampleFeed_Follow() {
	feed := gc.NewFeed(1024)
	feed.Publish(gc.Event{Type: gc.SyncChange, Sync: &gc.SyncState{Resources: []string{"v1/pods"}}})
	ctx, stop := context.WithCancel(context.Background())
	from := feed.LastSeq() // what came before is in the clients' snapshots
	feed.Publish(gc.Event{Type: gc.NodeAdded, Node: &gc.NodeState{ObjectRef: gc.ObjectRef{Kind: "Pod", Name: "web", UID: "u1"}}},
		gc.Event{Type: gc.NodeRemoved, Node: &gc.NodeState{ObjectRef: gc.ObjectRef{Kind: "Pod", Name: "web", UID: "u1"}}})
	err := feed.Follow(ctx, from, gc.Follower{
		Resync: func(context.Context) (uint64, error) {
			fmt.Println("fell behind: every client resyncs")
			return feed.LastSeq(), nil
		},
		Events: func(_ context.Context, events []gc.Event) error {
			for _, e := range events {
				fmt.Println(e.Seq, e.Type, e.Node.Name)
			}
			if events[len(events)-1].Seq == 3 {
				stop()
			}
			return nil
		},
	})
	fmt.Println(err)
	// Output:
	// 2 nodeAdded web
	// 3 nodeRemoved web
	// context canceled
}
