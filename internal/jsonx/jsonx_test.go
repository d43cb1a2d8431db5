package jsonx

import "testing"

func TestMarshalKeepsHTMLAndDropsNewline(t *testing.T) {
	got, err := Marshal(map[string]string{"cmd": "a && b <main>"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"cmd":"a && b <main>"}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if _, err := Marshal(func() {}); err == nil {
		t.Fatal("a func encoded without error")
	}
}
