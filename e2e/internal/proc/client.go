package proc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Reply is what the client observed of one request.
type Reply struct {
	Kind    string
	Node    int // the node that answered (or was last tried)
	Status  int
	Raw     []byte
	Err     error // the request may have reached the node: outcome unknown
	Down    bool  // no node accepted the connection: nothing was sent
	Latency time.Duration
	Env     struct {
		Code    any             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
}

func (r *Reply) Code() string { return fmt.Sprint(r.Env.Code) }

// Unknown is true when the write may or may not have happened: the
// connection broke after sending (a killed node), or the node failed with
// 5xx (which never promises that nothing was written).
func (r *Reply) Unknown() bool { return r.Err != nil || r.Status >= 500 }

func (r *Reply) Data(into any) error {
	if err := json.Unmarshal(r.Env.Data, into); err != nil {
		return fmt.Errorf("%s: decode data %s: %w", r.Kind, r.Env.Data, err)
	}
	return nil
}

func (r *Reply) String() string {
	switch {
	case r.Down:
		return fmt.Sprintf("%s: no node reachable", r.Kind)
	case r.Err != nil:
		return fmt.Sprintf("%s via node %d: %v", r.Kind, r.Node, r.Err)
	}
	raw := r.Raw
	if len(raw) > 400 {
		raw = raw[:400]
	}
	return fmt.Sprintf("%s via node %d: %d %s", r.Kind, r.Node, r.Status, raw)
}

// Client sends each request to a chosen node and, when that node
// refuses the connection (it is down: nothing was sent), to the next one,
// as a load balancer would.
type Client struct {
	Nodes []*Node
	HTTP  *http.Client
	rr    atomic.Uint64
}

// NewClient spreads requests over nodes.
func NewClient(nodes []*Node) *Client {
	return &Client{Nodes: nodes, HTTP: &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second, DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
	}}}
}

// Next picks the next node round-robin.
func (c *Client) Next() int { return int(c.rr.Add(1) % uint64(len(c.Nodes))) }

// Other picks a node other than n (round-robin among the others).
func (c *Client) Other(n int) int {
	if len(c.Nodes) == 1 {
		return n
	}
	return (n + 1 + int(c.rr.Add(1)%uint64(len(c.Nodes)-1))) % len(c.Nodes)
}

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// Send builds the request for a node's base URL and sends it to node first,
// then to the others while connections are refused. avoid, when >= 0, is a
// node never used (a read-after-write must not go back to the writer).
func (c *Client) Send(kind string, first, avoid int, build func(base string) (*http.Request, error)) *Reply {
	r := &Reply{Kind: kind, Node: first}
	for i := range len(c.Nodes) {
		n := (first + i) % len(c.Nodes)
		if n == avoid || c.Nodes[n].Drained.Load() {
			continue
		}
		req, err := build(c.Nodes[n].Base)
		if err != nil {
			r.Err = err
			return r
		}
		start := time.Now()
		res, err := c.HTTP.Do(req)
		r.Node = n
		if err != nil {
			if isDialError(err) {
				continue
			}
			r.Err, r.Latency = err, time.Since(start)
			return r
		}
		r.Raw, err = io.ReadAll(res.Body)
		res.Body.Close()
		r.Raw = bytes.TrimSpace(r.Raw)
		r.Status, r.Latency = res.StatusCode, time.Since(start)
		if err != nil {
			r.Err = err
			return r
		}
		if bytes.HasPrefix(bytes.TrimSpace(r.Raw), []byte("{")) {
			_ = json.Unmarshal(r.Raw, &r.Env)
		}
		return r
	}
	r.Down = true
	return r
}
