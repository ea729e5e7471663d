package pgwire

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/meterstore/meterstore/config"
)

// encode returns the wire bytes of msgs.
func encode(t testing.TB, msgs ...pgproto3.FrontendMessage) []byte {
	var b []byte
	for _, m := range msgs {
		var err error
		if b, err = m.Encode(b); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// FuzzSession feeds a session bytes as a client would send them, from
// the startup on, over net.Pipe: whatever they are, the server must not
// panic, and must end the session when the client goes away.
func FuzzSession(f *testing.F) {
	startup := encode(f, &pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": "reporting", "database": "meterstore"}})
	login := append(startup, encode(f, &pgproto3.PasswordMessage{Password: testPassword})...)
	f.Add(startup[:7])                                              // a truncated startup
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 0, 3, 0, 0})               // a huge length
	f.Add([]byte{0, 0, 0, 8, 0, 9, 0, 0})                           // a bad protocol version
	f.Add(append(encode(f, &pgproto3.SSLRequest{}), "garbage!"...)) // an SSLRequest then garbage
	f.Add(append(encode(f, &pgproto3.GSSEncRequest{}), startup...)) // GSS refused, then a startup
	f.Add(encode(f, &pgproto3.CancelRequest{ProcessID: 1, SecretKey: []byte{1, 2, 3, 4}}))
	f.Add(append(startup, encode(f, &pgproto3.PasswordMessage{Password: "wrong"})...))
	f.Add(append(login, encode(f, &pgproto3.Query{String: "SET DateStyle = ISO, DMY; SHOW ALL"})...))
	f.Add(append(login, encode(f, &pgproto3.Query{String: "BEGIN; SHOW meterstore.tiers"}, &pgproto3.Query{String: "SHOW ALL"},
		&pgproto3.Query{String: "COPY (SELECT 1) TO STDOUT WITH (FORMAT csv, HEADER)"}, &pgproto3.Query{String: "/* x */ ;"})...))
	f.Add(append(login, encode(f,
		&pgproto3.Parse{Name: "s", Query: "SELECT $1"},
		&pgproto3.Bind{PreparedStatement: "s", Parameters: [][]byte{[]byte("a"), []byte("b")}}, // more params than the Parse
		&pgproto3.Execute{MaxRows: 1}, &pgproto3.Sync{})...))
	f.Add(append(login, encode(f,
		&pgproto3.Parse{Query: "SHOW TimeZone"}, &pgproto3.Describe{ObjectType: 'S'},
		&pgproto3.Bind{ResultFormatCodes: []int16{1, 0, 7}}, &pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{MaxRows: 1}, &pgproto3.Execute{}, &pgproto3.Close{ObjectType: 'P'}, &pgproto3.Flush{}, &pgproto3.Sync{})...))
	huge := binary.BigEndian.AppendUint32([]byte{'Q'}, 1<<30)
	f.Add(append(login, huge...)) // a message past the bound

	f.Fuzz(func(t *testing.T, data []byte) {
		srv, err := newServer(refusing{}, Options{StartupTimeout: time.Second, Tokens: []config.Token{
			{Name: "reporting", Hash: sha256.Sum256([]byte(testPassword)), Scopes: []string{config.ScopeQuery}}}})
		if err != nil {
			t.Fatal(err)
		}
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			srv.serveConn(context.Background(), server)
		}()
		go io.Copy(io.Discard, client)
		client.SetWriteDeadline(time.Now().Add(2 * time.Second))
		client.Write(data)
		client.Write(encode(t, &pgproto3.Terminate{}))
		select {
		case <-done:
		case <-time.After(10 * time.Millisecond):
		}
		client.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the session did not end when its client went away")
		}
	})
}
