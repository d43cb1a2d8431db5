package audit

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Checkpoint is a signed statement of the chain's head at a time. Kept
// somewhere the database's writers cannot reach, it lets Verify detect a
// chain rewritten before it or cut short after it.
type Checkpoint struct {
	Version int       `json:"version"`
	Seq     int64     `json:"seq"`
	Hash    string    `json:"hash"`
	At      time.Time `json:"at"`
	// PublicKey is the Ed25519 key that signed, base64 (standard encoding).
	PublicKey string `json:"public_key"`
	// Signature is the Ed25519 signature of Message(), base64.
	Signature string `json:"signature"`
}

// Message is what a checkpoint's signature covers:
// "gatehouse audit checkpoint v1\nseq=N\nhash=H\nat=T\n", T as in TimeFormat.
func (c *Checkpoint) Message() []byte {
	return fmt.Appendf(nil, "gatehouse audit checkpoint v1\nseq=%d\nhash=%s\nat=%s\n", c.Seq, c.Hash, c.At.UTC().Format(TimeFormat))
}

// Sign makes a checkpoint of head at a time.
func Sign(key ed25519.PrivateKey, head Head, at time.Time) Checkpoint {
	c := Checkpoint{Version: 1, Seq: head.Seq, Hash: head.Hash, At: at.UTC().Truncate(time.Microsecond),
		PublicKey: base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey))}
	c.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(key, c.Message()))
	return c
}

// Check verifies the checkpoint's signature with its own key and, when
// trusted is set, that its key is trusted.
func (c *Checkpoint) Check(trusted ed25519.PublicKey) error {
	if c.Version != 1 {
		return fmt.Errorf("checkpoint: version %d is not 1", c.Version)
	}
	pub, err := base64.StdEncoding.DecodeString(c.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return errors.New("checkpoint: public_key is not a base64 Ed25519 key")
	}
	sig, err := base64.StdEncoding.DecodeString(c.Signature)
	if err != nil || !ed25519.Verify(pub, c.Message(), sig) {
		return errors.New("checkpoint: the signature does not match: the file was changed or not signed by its key")
	}
	if trusted != nil && !trusted.Equal(ed25519.PublicKey(pub)) {
		return fmt.Errorf("checkpoint: signed by key %s, not by this server's key %s", Fingerprint(pub), Fingerprint(trusted))
	}
	return nil
}

// Fingerprint names a public key: the first 16 hex digits of its SHA-256.
func Fingerprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// KeyFingerprint is the fingerprint of the checkpoint's key ("" if unreadable).
func (c *Checkpoint) KeyFingerprint() string {
	pub, err := base64.StdEncoding.DecodeString(c.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return ""
	}
	return Fingerprint(pub)
}

// LoadKey reads an Ed25519 private key in PEM (PKCS #8, "PRIVATE KEY"), as
// `openssl genpkey -algorithm ed25519` writes it.
func LoadKey(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseKey(b)
}

// ParseKey parses what LoadKey reads.
func ParseKey(b []byte) (ed25519.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, errors.New("not a PEM private key (make one with: openssl genpkey -algorithm ed25519 -out audit.key)")
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not a PKCS #8 private key: %w", err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T key, not Ed25519 (make one with: openssl genpkey -algorithm ed25519 -out audit.key)", k)
	}
	return ek, nil
}

// ReadCheckpoint reads a checkpoint file.
func ReadCheckpoint(path string) (*Checkpoint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("checkpoint %s: not a checkpoint: %w", path, err)
	}
	return &c, nil
}

// WriteCheckpoint writes c into dir as checkpoint-<seq>.json, atomically
// (a temporary file renamed), and returns its path.
func WriteCheckpoint(dir string, c Checkpoint) (string, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("checkpoint-%012d.json", c.Seq))
	tmp, err := os.CreateTemp(dir, ".checkpoint-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}
