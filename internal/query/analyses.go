package query

import (
	"container/list"
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The analyses an engine keeps: the texts of at most maxAnalysedBytes,
// none of a statement longer than maxAnalysedStatement, which is rare
// and would crowd out the small ones asked again and again.
const (
	maxAnalysedBytes     = 8 << 20
	maxAnalysedStatement = 64 << 10
)

// analyses keeps the analyses of recent statements, least recently used
// first out. An analysis is a function of the statement's text, its
// default table and its parameters' values alone (DuckDB takes no
// constant that depends on the time: CAST('now' AS TIMESTAMPTZ) is an
// error), so that a statement asked again need not be parsed again, which
// costs a small statement milliseconds. An analysis kept is shared: none
// of its maps or slices is changed after analyze.
type analyses struct {
	mu    sync.Mutex
	bytes int
	order *list.List // of *analysed, the most recent first
	byKey map[string]*list.Element
	hits  int // tests
}

type analysed struct {
	key string
	a   analysis
}

func newAnalyses() *analyses {
	return &analyses{order: list.New(), byKey: map[string]*list.Element{}}
}

// get returns the analysis kept under key.
func (c *analyses) get(key string) (analysis, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return analysis{}, false
	}
	c.order.MoveToFront(el)
	c.hits++
	return el.Value.(*analysed).a, true
}

// put keeps a under key, and forgets the least recently used analyses
// past maxAnalysedBytes.
func (c *analyses) put(key string, a analysis) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; ok {
		return
	}
	c.byKey[key] = c.order.PushFront(&analysed{key: key, a: a})
	c.bytes += cost(key, a)
	for c.bytes > maxAnalysedBytes {
		el := c.order.Back()
		old := el.Value.(*analysed)
		c.order.Remove(el)
		delete(c.byKey, old.key)
		c.bytes -= cost(old.key, old.a)
	}
}

// cost approximates the bytes an analysis kept holds: its key and the
// statement it runs (a rendering, when it names a system relation).
func cost(key string, a analysis) int {
	n := len(key) + 256
	if a.rendered {
		n += len(a.sql)
	}
	return n
}

// analyze returns the analysis of text with default table self and
// values params: the one kept, or analyze's on the connection conn
// returns, kept if it succeeds.
func (e *Engine) analyze(ctx context.Context, conn func(context.Context) (querier, error), text, self string, params []any) (analysis, error) {
	key, ok := analysisKey(text, self, params)
	if ok {
		if a, hit := e.analysed.get(key); hit {
			return a, nil
		}
	}
	q, err := conn(ctx)
	if err != nil {
		return analysis{}, err
	}
	a, err := analyze(ctx, q, text, self, params)
	if err == nil && ok {
		a.memo = new(runMemo)
		e.analysed.put(key, a)
	}
	return a, err
}

// analysisKey returns the key of an analysis: the statement's text, its
// default table and its parameters' values with their types. ok is false
// for a statement longer than maxAnalysedStatement and for a value of a
// type whose text might not tell it apart from another value, which is
// analysed every time.
func analysisKey(text, self string, params []any) (key string, ok bool) {
	if len(text) > maxAnalysedStatement {
		return "", false
	}
	var b strings.Builder
	b.Grow(len(text) + len(self) + 16*len(params) + 8)
	b.WriteString(strconv.Itoa(len(self)))
	b.WriteByte(':')
	b.WriteString(self)
	b.WriteString(strconv.Itoa(len(params)))
	for _, p := range params {
		if n, named := p.(sql.NamedArg); named {
			b.WriteString("n" + strconv.Itoa(len(n.Name)) + ":" + n.Name)
			p = n.Value
		}
		v, ok := paramText(p)
		if !ok {
			return "", false
		}
		b.WriteString(strconv.Itoa(len(v)))
		b.WriteByte(':')
		b.WriteString(v)
	}
	b.WriteByte('|')
	b.WriteString(text)
	return b.String(), true
}

// paramText returns a value of a parameter as text that tells it apart
// from every other value of every type paramText takes.
func paramText(p any) (string, bool) {
	switch v := p.(type) {
	case nil:
		return "nil", true
	case string:
		return "s" + v, true
	case bool:
		return "b" + strconv.FormatBool(v), true
	case int:
		return "i" + strconv.FormatInt(int64(v), 10), true
	case int32:
		return "i32" + strconv.FormatInt(int64(v), 10), true
	case int64:
		return "i64" + strconv.FormatInt(v, 10), true
	case float64:
		return "f" + strconv.FormatFloat(v, 'g', -1, 64), true
	case time.Time:
		return "t" + v.Format(time.RFC3339Nano) + " " + v.Location().String(), true
	}
	return "", false
}
