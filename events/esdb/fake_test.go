package esdb

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/protos/shared"
	api "github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// fakeServer is a small, honest stand-in for EventStoreDB's Streams gRPC
// service: it speaks the real protocol (the client's own generated code)
// and answers with what each test scripts, recording what it was sent. It
// implements only Append and Read; the client's server-features call gets
// Unimplemented, which the client accepts from old servers.
type fakeServer struct {
	api.UnimplementedStreamsServer

	mu      sync.Mutex
	append  func(call int, opts *api.AppendReq_Options, evs []*api.AppendReq_ProposedMessage) (*api.AppendResp, error)
	read    func(call int, req *api.ReadReq, srv api.Streams_ReadServer) error
	appends int
	reads   int
	leader  []string // requires-leader header of every call, in order
	open    int      // Read streams the server is still serving
	addr    string
}

func (f *fakeServer) seen(srvMD metadata.MD) {
	v := srvMD.Get(requiresLeader)
	f.leader = append(f.leader, fmt.Sprint(v))
}

func (f *fakeServer) Append(srv api.Streams_AppendServer) error {
	md, _ := metadata.FromIncomingContext(srv.Context())
	first, err := srv.Recv()
	if err != nil {
		return err
	}
	var evs []*api.AppendReq_ProposedMessage
	for {
		msg, err := srv.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		evs = append(evs, msg.GetProposedMessage())
	}
	f.mu.Lock()
	f.seen(md)
	f.appends++
	call, fn := f.appends, f.append
	f.mu.Unlock()
	resp, err := fn(call, first.GetOptions(), evs)
	if err != nil {
		return err
	}
	return srv.SendAndClose(resp)
}

func (f *fakeServer) Read(req *api.ReadReq, srv api.Streams_ReadServer) error {
	md, _ := metadata.FromIncomingContext(srv.Context())
	f.mu.Lock()
	f.seen(md)
	f.reads++
	f.open++
	call, fn := f.reads, f.read
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.open--
		f.mu.Unlock()
	}()
	if fn == nil {
		return nil // an empty $all: the probe's read
	}
	return fn(call, req, srv)
}

// openStreams is how many Read streams the server is serving right now.
func (f *fakeServer) openStreams() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.open
}

// setRead replaces the Read script while the server runs.
func (f *fakeServer) setRead(fn func(call int, req *api.ReadReq, srv api.Streams_ReadServer) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.read = fn
}

func (f *fakeServer) appendCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.appends
}

func (f *fakeServer) readCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

func (f *fakeServer) leaderHeaders() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.leader...)
}

// start serves f on a loopback port and returns its connection string.
func (f *fakeServer) start(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	api.RegisterStreamsServer(gs, f)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	f.addr = lis.Addr().String()
	return "esdb://" + f.addr + "?tls=false&maxDiscoverAttempts=1&gossipTimeout=2"
}

// notLeader refuses a call the way a follower does: the client reconnects
// to the endpoint named in the trailers (here the fake itself).
func (f *fakeServer) notLeader(stream grpc.ServerStream) error {
	host, port, _ := net.SplitHostPort(f.addr)
	stream.SetTrailer(metadata.Pairs("exception", "not-leader", "leader-endpoint-host", host, "leader-endpoint-port", port))
	return status.Error(codes.NotFound, "Leader info available")
}

func success(rev uint64, commit, prepare uint64) *api.AppendResp {
	s := &api.AppendResp_Success{CurrentRevisionOption: &api.AppendResp_Success_CurrentRevision{CurrentRevision: rev}}
	if commit == 0 && prepare == 0 {
		s.PositionOption = &api.AppendResp_Success_NoPosition{NoPosition: &shared.Empty{}}
	} else {
		s.PositionOption = &api.AppendResp_Success_Position{Position: &api.AppendResp_Position{CommitPosition: commit, PreparePosition: prepare}}
	}
	return &api.AppendResp{Result: &api.AppendResp_Success_{Success: s}}
}

func wrongVersionResp(current int64) *api.AppendResp {
	w := &api.AppendResp_WrongExpectedVersion{ExpectedRevisionOption: &api.AppendResp_WrongExpectedVersion_ExpectedNoStream{ExpectedNoStream: &shared.Empty{}}}
	if current < 0 {
		w.CurrentRevisionOption = &api.AppendResp_WrongExpectedVersion_CurrentNoStream{CurrentNoStream: &shared.Empty{}}
	} else {
		w.CurrentRevisionOption = &api.AppendResp_WrongExpectedVersion_CurrentRevision{CurrentRevision: uint64(current)}
	}
	return &api.AppendResp{Result: &api.AppendResp_WrongExpectedVersion_{WrongExpectedVersion: w}}
}

// eventResp is one recorded event as the server sends it.
func eventResp(id, stream, typ string, rev, pos uint64) *api.ReadResp {
	return &api.ReadResp{Content: &api.ReadResp_Event{Event: &api.ReadResp_ReadEvent{
		Event: &api.ReadResp_ReadEvent_RecordedEvent{
			Id:               &shared.UUID{Value: &shared.UUID_String_{String_: id}},
			StreamIdentifier: &shared.StreamIdentifier{StreamName: []byte(stream)},
			StreamRevision:   rev, PreparePosition: pos, CommitPosition: pos,
			Metadata: map[string]string{"type": typ, "content-type": "application/json",
				"created": strconv.FormatInt(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()/100, 10)},
			Data: []byte(`{}`),
		},
		Position: &api.ReadResp_ReadEvent_CommitPosition{CommitPosition: pos},
	}}}
}

func confirmation() *api.ReadResp {
	return &api.ReadResp{Content: &api.ReadResp_Confirmation{Confirmation: &api.ReadResp_SubscriptionConfirmation{SubscriptionId: "fake"}}}
}
