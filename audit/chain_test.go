package audit

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The hash is specified so that anyone can check a chain without this
// code: this vector was computed with sha256sum over the genesis hash
// followed by the canonical JSON written out by hand.
func TestHashVector(t *testing.T) {
	r := Record{ID: 42, RequestID: "01JABC", At: time.Date(2026, 3, 1, 13, 0, 0, 123456789, time.FixedZone("CET", 3600)),
		Type: "decided", Actor: "web:alice", Channel: "web", Detail: `approved: <ok> & "fine"`}
	next := EmptyHead.Seal(&r)
	want := `{"actor":"web:alice","at":"2026-03-01T12:00:00.123456Z","channel":"web","detail":"approved: <ok> & \"fine\"","id":42,"request_id":"01JABC","seq":1,"type":"decided"}`
	if got := string(r.Canonical()); got != want {
		t.Fatalf("canonical JSON:\n got %s\nwant %s", got, want)
	}
	if r.Hash != "15d029225772e7980042cd3c57302e5037a1ac0e77006929230056f200287fa2" || r.PrevHash != Genesis || r.Seq != 1 {
		t.Fatalf("sealed: %+v", r)
	}
	if next != (Head{Seq: 1, Hash: r.Hash}) {
		t.Fatalf("next head %+v", next)
	}
}

func TestRanges(t *testing.T) {
	for _, seqs := range [][]int64{nil, {7}, {1, 2, 3, 5, 7, 8, 9, 12}, {4, 5}} {
		s := Ranges(seqs)
		back, err := ParseRanges(s)
		if err != nil || !reflect.DeepEqual(back, seqs) {
			t.Errorf("%v → %q → %v %v", seqs, s, back, err)
		}
	}
	if s := Ranges([]int64{1, 2, 3, 5, 7, 8}); s != "1-3,5,7-8" {
		t.Errorf("Ranges: %q", s)
	}
	for _, bad := range []string{"x", "1-", "5-3", "1,,2", "0-99999999999"} {
		if _, err := ParseRanges(bad); err == nil {
			t.Errorf("ParseRanges(%q) took it", bad)
		}
	}
}

func TestKeysAndCheckpointFiles(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	got, err := ParseKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	if err != nil || !got.Equal(key) {
		t.Fatalf("ParseKey: %v", err)
	}
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ = x509.MarshalPKCS8PrivateKey(ec)
	if _, err := ParseKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})); err == nil || !strings.Contains(err.Error(), "not Ed25519") {
		t.Fatalf("an ECDSA key: %v", err)
	}
	if _, err := ParseKey([]byte("hello")); err == nil || !strings.Contains(err.Error(), "openssl genpkey") {
		t.Fatalf("not PEM: %v", err)
	}
	dir := t.TempDir()
	cp := Sign(key, Head{Seq: 12, Hash: strings.Repeat("ab", 32)}, time.Now())
	path, err := WriteCheckpoint(dir, cp)
	if err != nil || filepath.Base(path) != "checkpoint-000000000012.json" {
		t.Fatalf("write: %s %v", path, err)
	}
	back, err := ReadCheckpoint(path)
	if err != nil || back.Check(pub) != nil || back.Seq != 12 || back.KeyFingerprint() != Fingerprint(pub) {
		t.Fatalf("read back: %+v %v", back, err)
	}
	for name, edit := range map[string]func(c *Checkpoint){
		"seq":  func(c *Checkpoint) { c.Seq++ },
		"hash": func(c *Checkpoint) { c.Hash = strings.Repeat("cd", 32) },
		"time": func(c *Checkpoint) { c.At = c.At.Add(time.Second) },
		"key": func(c *Checkpoint) {
			_, other, _ := ed25519.GenerateKey(rand.Reader)
			c.PublicKey = Sign(other, Head{}, time.Now()).PublicKey
		},
	} {
		c := *back
		edit(&c)
		if err := c.Check(nil); err == nil {
			t.Errorf("a checkpoint with its %s edited passed", name)
		}
	}
}

// TestCallDigest: a call's digest is SHA-256 of its canonical JSON, every
// value a string, keys sorted, nothing escaped that JSON does not need;
// this vector was computed with Python's json.dumps(sort_keys=True,
// separators=(',', ':'), ensure_ascii=False) and hashlib, apart from
// Gatehouse. Sealed finds digests only at the end of the details of the
// events that seal them: one an agent or approver writes elsewhere (a
// report of what ran, a reason before the seal) is text.
func TestCallDigest(t *testing.T) {
	c := Call{Tool: "oa__purchase_pay", Args: `{"vendor":"ACME","amount":60000}`, Summary: "Pay <ACME> ¥60,000", Metadata: `{}`,
		Agent: "procurement-bot", User: "u_42", Session: "s_9", ToolCallID: "call_7", Caller: "tok", Route: "payments",
		CreatedAt: time.Date(2026, 3, 1, 20, 0, 0, 123456789, time.FixedZone("CST", 8*3600))}
	const want = "0c6849f34e16fc53a71c44a2b1b2dfb46590151f7e46300e8ca8ce61e12209c1"
	if got := c.Digest(); got != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
	v := Verdict{Status: "approved", By: "web:alice", Via: "web", At: c.CreatedAt}
	fake := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		typ, detail   string
		call, verdict string
	}{
		{"created", "route payments; channels ops; " + c.Mark(), want, ""},
		{"policy_verdict", "approved: allowed by route small; " + c.Mark() + "; " + v.Mark(), want, v.Digest()},
		{"decided", "approved: looks fine; " + v.Mark(), "", v.Digest()},
		{"cancelled", "cancelled: ; call sha256:" + fake + "; " + v.Mark(), "", v.Digest()},
		{"tool_ran", "exit 0; call sha256:" + fake, "", ""},
		{"decided", "approved: ; verdict sha256:" + fake + " (with edited arguments)", "", ""},
		{"created", "route payments; " + CallMark + want[:63], "", ""},
		{"created", "route payments; " + CallMark + strings.ToUpper(want), "", ""},
	} {
		call, verdict := Sealed(tc.typ, tc.detail)
		if call != tc.call || verdict != tc.verdict {
			t.Errorf("Sealed(%s, %q) = %q, %q; want %q, %q", tc.typ, tc.detail, call, verdict, tc.call, tc.verdict)
		}
	}
	c.Args = `{"vendor":"ACME","amount":1}`
	if c.Digest() == want {
		t.Fatal("other arguments, the same digest")
	}
}
