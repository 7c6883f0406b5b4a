package sdk

import (
	"sync"

	"github.com/missingstudio/sanddune/sdk/internal/wire"
)

// queue hands items from a producer to a sender goroutine that sends them
// in batches: everything queued while the previous message was being sent
// goes into the next one, so batching adds no latency. The producer blocks
// while wire.MaxBatchBytes are queued.
type queue[T any] struct {
	mu      sync.Mutex
	cond    sync.Cond
	items   []T
	size    int
	closed  bool // the producer is done
	aborted bool // the sender is gone: drop items
}

func newQueue[T any]() *queue[T] {
	q := &queue[T]{}
	q.cond.L = &q.mu
	return q
}

// push queues item, whose size is n bytes.
func (q *queue[T]) push(item T, n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.size >= wire.MaxBatchBytes && !q.aborted {
		q.cond.Wait()
	}
	if q.aborted || q.closed {
		return
	}
	q.items = append(q.items, item)
	q.size += n
	q.cond.Broadcast()
}

// take waits for items and returns all of them; ok is false once the queue
// is closed and empty, or aborted.
func (q *queue[T]) take() (items []T, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed && !q.aborted {
		q.cond.Wait()
	}
	if q.aborted || len(q.items) == 0 {
		return nil, false
	}
	items, q.items, q.size = q.items, nil, 0
	q.cond.Broadcast()
	return items, true
}

func (q *queue[T]) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

func (q *queue[T]) abort() {
	q.mu.Lock()
	q.aborted = true
	q.items = nil
	q.cond.Broadcast()
	q.mu.Unlock()
}

// drain sends batches from q until it is closed and empty; on a send error
// it aborts q (so the producer never blocks) and returns the error.
func (q *queue[T]) drain(send func([]T) error) error {
	for {
		items, ok := q.take()
		if !ok {
			return nil
		}
		if err := send(items); err != nil {
			q.abort()
			return err
		}
	}
}
