package feishu

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"testing"

	"github.com/gatehouse-dev/gatehouse/channel/feishu/feishutest"
)

func TestDecryptDocumentedVector(t *testing.T) {
	got, err := decrypt("P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=", "test key")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "hello world" {
		t.Fatalf("decrypt = %q, want %q", got, "hello world")
	}
}

func TestDecrypt(t *testing.T) {
	plain := []byte(`{"challenge":"abc","token":"v-token","type":"url_verification"}`)
	enc := feishutest.Encrypt(plain, "e-key")
	if got, err := decrypt(enc, "e-key"); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("round trip = %q, %v", got, err)
	}
	if enc2 := feishutest.Encrypt(plain, "e-key"); enc2 == enc {
		t.Error("the IV is not random")
	}
	for name, in := range map[string]string{
		"wrong key":  enc,
		"not base64": "%%%",
		"too short":  base64.StdEncoding.EncodeToString([]byte("short")),
	} {
		key := "e-key"
		if name == "wrong key" {
			key = "other"
		}
		if got, err := decrypt(in, key); err == nil && bytes.Equal(got, plain) {
			t.Errorf("%s: decrypted anyway", name)
		}
	}
}

func TestSignature(t *testing.T) {
	body := []byte(`{"encrypt":"x"}`)
	sum := sha256.Sum256([]byte("1700000000" + "nonce" + "e-key" + string(body)))
	want := ""
	for _, b := range sum {
		want += string("0123456789abcdef"[b>>4]) + string("0123456789abcdef"[b&15])
	}
	if got := signature("1700000000", "nonce", "e-key", body); got != want {
		t.Fatalf("signature = %s, want %s", got, want)
	}
	if !validSignature(want, "1700000000", "nonce", "e-key", body) || validSignature(want, "1700000001", "nonce", "e-key", body) {
		t.Error("validSignature does not check the timestamp")
	}
}
