package pathd

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

const adminToken = "scenario-admin-token"

// repo is the repository root (this file is in clients/go).
func repo(t *testing.T) string {
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

type server struct {
	url  string
	addr string
	cmd  *exec.Cmd
}

// startPathd runs PATHD_BIN (else the workspace's debug build) on a free port until the
// test ends (SIGTERM to its pid), and waits until it is ready.
func startPathd(t *testing.T) *server {
	t.Helper()
	root := repo(t)
	bin := os.Getenv("PATHD_BIN")
	if bin == "" {
		bin = filepath.Join(root, "target/debug/pathd")
	}
	cmd := exec.Command(bin, "serve",
		"--addr", "127.0.0.1:0",
		"--maps-dir", filepath.Join(root, "maps"),
		"--data-dir", filepath.Join(t.TempDir(), "data"),
		"--admin-token", adminToken,
		"--pool-threads", "2",
		// One event kept per subscription: a reconnect after two events gets a resync.
		"--subscription-event-buffer", "1")
	cmd.Env = append(os.Environ(), "PATHD_LOG_FORMAT=json", "RUST_LOG=warn,pathd=info")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var rec struct {
				Message string `json:"message"`
				Addr    string `json:"addr"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Message == "pathd listening" {
				addr <- rec.Addr
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	s := &server{cmd: cmd}
	select {
	case s.addr = <-addr:
	case <-time.After(60 * time.Second):
		t.Fatal("pathd did not start listening")
	}
	s.url = "http://" + s.addr
	until(t, "pathd ready", func() bool {
		resp, err := http.Get(s.url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return s
}

// proxy forwards TCP to a server; cut drops every open connection.
type proxy struct {
	url   string
	mu    sync.Mutex
	conns map[net.Conn]bool
}

func startProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{url: "http://" + ln.Addr().String(), conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[u] = true, true
			p.mu.Unlock()
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				dst.Close()
				src.Close()
				p.mu.Lock()
				delete(p.conns, dst)
				delete(p.conns, src)
				p.mu.Unlock()
			}
			go pipe(u, c)
			go pipe(c, u)
		}
	}()
	return p
}

// cut closes every open connection and says how many there were.
func (p *proxy) cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.conns)
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
	return n
}

// until polls cond every 20 ms (at most 30 s): it waits for a state, never times one.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 1500; i++ {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}
