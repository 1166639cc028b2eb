package shape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

// referenceJSON is the generator the server had before it streamed: the documents must not change.
func referenceJSON(n int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"items":[`)
	const tail = `],"pad":""}`
	for i := 0; ; i++ {
		item := fmt.Sprintf(`{"id":%d,"name":"item-%07d","price":%d.%02d,"tags":["a%d","b%d"],"ok":%t}`,
			i, i, (i*7919)%10000, i%100, i%13, i%17, i%3 == 0)
		sep := ""
		if i > 0 {
			sep = ","
		}
		if sb.Len()+len(sep)+len(item)+len(tail) > n {
			break
		}
		sb.WriteString(sep + item)
	}
	pad := n - sb.Len() - len(tail)
	sb.WriteString(`],"pad":"`)
	sb.WriteString(strings.Repeat("x", pad))
	sb.WriteString(`"}`)
	return []byte(sb.String())
}

func TestStreamedJSONIsTheSameDocument(t *testing.T) {
	for _, n := range []int{64, 65, 90, 91, 92, 100, 1000, 4096, 32767, 32768, 32769, 335114, 1 << 20, 1<<20 + 1, 3_000_001} {
		var b bytes.Buffer
		if err := WriteJSON(&b, n); err != nil {
			t.Fatal(err)
		}
		want := referenceJSON(n)
		if !bytes.Equal(b.Bytes(), want) {
			t.Fatalf("n=%d: streamed document differs (len %d vs %d)", n, b.Len(), len(want))
		}
		if !json.Valid(want) {
			t.Fatalf("n=%d: not valid JSON", n)
		}
	}
	if allocs := testing.AllocsPerRun(3, func() { WriteJSON(io.Discard, 8<<20) }); allocs > 2 {
		t.Fatalf("streaming 8 MB allocated %v times", allocs)
	}
}

func TestJSONCacheStaysWithinItsBudget(t *testing.T) {
	for i := 0; i < 80; i++ {
		JSONDoc(maxCachedJSON - i)
	}
	jsonCache.mu.Lock()
	total, counted := 0, jsonCache.bytes
	jsonCache.docs.Range(func(_, v any) bool { total += len(v.([]byte)); return true })
	jsonCache.mu.Unlock()
	if total != counted || total > jsonCacheBytes {
		t.Fatalf("cache holds %d bytes (counted %d), budget %d", total, counted, jsonCacheBytes)
	}
}
