package feishu

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
)

// decrypt opens an encrypted callback body's "encrypt" field: base64 of
// IV (16 bytes) followed by AES-256-CBC ciphertext, key SHA-256(encryptKey),
// PKCS#7 padding. Unlike the SDK's EventDecrypt it checks the padding
// rather than trimming to the outermost braces.
func decrypt(encrypted, encryptKey string) ([]byte, error) {
	buf, err := base64.StdEncoding.DecodeString(encrypted)
	if err != nil {
		return nil, errors.New("feishu: decrypt: not base64")
	}
	if len(buf) < 2*aes.BlockSize || len(buf)%aes.BlockSize != 0 {
		return nil, errors.New("feishu: decrypt: bad ciphertext length")
	}
	key := sha256.Sum256([]byte(encryptKey))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	iv, data := buf[:aes.BlockSize], bytes.Clone(buf[aes.BlockSize:])
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(data, data)
	n := int(data[len(data)-1])
	if n == 0 || n > aes.BlockSize || n > len(data) {
		return nil, errors.New("feishu: decrypt: bad padding")
	}
	for _, b := range data[len(data)-n:] {
		if int(b) != n {
			return nil, errors.New("feishu: decrypt: bad padding")
		}
	}
	return data[:len(data)-n], nil
}

// signature is Feishu's callback signature:
// hex(SHA-256(timestamp + nonce + encryptKey + body)).
func signature(timestamp, nonce, encryptKey string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(timestamp))
	h.Write([]byte(nonce))
	h.Write([]byte(encryptKey))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// validSignature compares in constant time.
func validSignature(got, timestamp, nonce, encryptKey string, body []byte) bool {
	want := signature(timestamp, nonce, encryptKey, body)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// sameSecret compares a presented token with the configured one in constant
// time; an empty configured token matches nothing.
func sameSecret(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
