package vercel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Transport settings.
const (
	// callTimeout bounds each attempt of a call up to its response headers
	// and, for calls that are not streams, its whole body.
	callTimeout = 2 * time.Minute
	// attempts is how often a retryable call is tried.
	attempts = 5
	// backoff is the first retry's base delay; it doubles, with jitter.
	backoff = 400 * time.Millisecond
	// maxRetryAfter is the longest Retry-After the client waits for.
	maxRetryAfter = time.Minute
)

// APIError is a non-2xx answer of the Vercel API.
type APIError struct {
	Status    int
	Code      string // Vercel's error code, e.g. "sandbox_stopped"
	Message   string
	RequestID string // the X-Vercel-Id header
	Op        string // method and path, e.g. "POST /v2/sandboxes/sessions/se_1/cmd"
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("vercel API %s: %d", e.Op, e.Status)
	if e.Code != "" {
		msg += " " + e.Code
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.RequestID != "" {
		msg += " (request " + e.RequestID + ")"
	}
	return msg
}

// isStatus reports whether err is an APIError with that status.
func isStatus(err error, status int) bool {
	var e *APIError
	return errors.As(err, &e) && e.Status == status
}

// retry says which failures a call retries.
type retry int

const (
	// retryAll: 429, 5xx and network errors (calls that are safe to repeat).
	retryAll retry = iota
	// retryRateLimit: 429 only, which the API answers before doing
	// anything; a command is not started twice.
	retryRateLimit
)

// client speaks Vercel's sandbox HTTP API. It never logs the token.
type client struct {
	base   string // without a trailing slash
	token  string
	teamID string
	http   *http.Client
	log    hclog.Logger
	// timeout bounds each attempt (callTimeout; tests shorten it).
	timeout time.Duration
	// sleep waits between attempts (tests may shorten it).
	sleep func(context.Context, time.Duration) error
}

func newClient(baseURL string, cred credentials, log hclog.Logger) *client {
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	return &client{
		base:    strings.TrimRight(baseURL, "/"),
		token:   cred.token,
		teamID:  cred.teamID,
		http:    &http.Client{}, // no client timeout: log streams last as long as their command
		log:     log,
		timeout: callTimeout,
		sleep:   sleepCtx,
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// request is one API call.
type request struct {
	method, path string
	query        url.Values
	body         []byte
	contentType  string
	header       map[string]string
	retry        retry
	// stream: the body is read by the caller, without the call timeout.
	stream bool
}

// jsonRequest makes a request with a JSON body (the API wants a JSON
// content type on every POST, even an empty one).
func jsonRequest(method, path string, body any) request {
	r := request{method: method, path: path, contentType: "application/json"}
	if body != nil {
		r.body, _ = json.Marshal(body)
	} else if method == http.MethodPost {
		r.body = []byte("{}")
	}
	return r
}

// do sends r, retrying as it says, and returns a 2xx response whose body
// the caller closes.
func (c *client) do(ctx context.Context, r request) (*http.Response, error) {
	q := url.Values{}
	for k, v := range r.query {
		q[k] = v
	}
	if c.teamID != "" {
		q.Set("teamId", c.teamID)
	}
	u := c.base + r.path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	op := r.method + " " + r.path
	for attempt := 1; ; attempt++ {
		resp, err := c.once(ctx, r, u)
		if err == nil && resp.StatusCode/100 == 2 {
			return resp, nil
		}
		var wait time.Duration
		if err == nil {
			apiErr := readError(resp, op)
			err = apiErr
			if ra, ok := retryAfter(resp); ok {
				wait = ra
			}
			if !retryable(r.retry, resp.StatusCode) || wait > maxRetryAfter {
				return nil, err
			}
		} else if ctx.Err() != nil {
			return nil, ctx.Err()
		} else {
			err = fmt.Errorf("vercel API %s: %w", op, err)
			if r.retry != retryAll {
				return nil, err
			}
		}
		if attempt == attempts {
			return nil, fmt.Errorf("%w (gave up after %d attempts)", err, attempts)
		}
		if wait == 0 {
			wait = time.Duration(float64(backoff<<(attempt-1)) * (1 + rand.Float64()))
		}
		c.log.Warn("vercel API call failed; retrying", "op", op, "error", err.Error(), "attempt", attempt, "wait", wait.String())
		if serr := c.sleep(ctx, wait); serr != nil {
			return nil, serr
		}
	}
}

// once makes one attempt, bounded by c.timeout up to the headers (and
// through the body, unless r.stream).
func (c *client) once(ctx context.Context, r request, u string) (*http.Response, error) {
	actx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(c.timeout, cancel)
	req, err := http.NewRequestWithContext(actx, r.method, u, bytes.NewReader(r.body))
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("User-Agent", "sanddune-vercel/"+Version)
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		timer.Stop()
		cancel()
		if errors.Is(err, context.Canceled) && ctx.Err() == nil {
			return nil, fmt.Errorf("no answer within %s", c.timeout)
		}
		return nil, err
	}
	if r.stream {
		timer.Stop()
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: func() { timer.Stop(); cancel() }}
	return resp, nil
}

// cancelBody releases the attempt's context with the body.
type cancelBody struct {
	io.ReadCloser
	cancel func()
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

func retryable(r retry, status int) bool {
	return status == http.StatusTooManyRequests || r == retryAll && status >= 500
}

// retryAfter reads a Retry-After header in seconds or as an HTTP date.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return max(time.Duration(n)*time.Second, time.Millisecond), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), time.Millisecond), true
	}
	return 0, false
}

// readError turns a non-2xx response into an APIError, reading Vercel's
// {"error":{"code","message"}} (or a top-level {code,message}).
func readError(resp *http.Response, op string) *APIError {
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &APIError{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Vercel-Id"), Op: op}
	var body struct {
		Error   *struct{ Code, Message string }
		Code    string
		Message string
	}
	if json.Unmarshal(data, &body) == nil {
		if body.Error != nil {
			e.Code, e.Message = body.Error.Code, body.Error.Message
		} else {
			e.Code, e.Message = body.Code, body.Message
		}
	}
	if e.Code == "" && e.Message == "" {
		e.Message = strings.TrimSpace(string(data))
		if len(e.Message) > 200 {
			e.Message = e.Message[:200] + "..."
		}
	}
	return e
}

// call sends r and decodes a JSON answer into out (when not nil).
func (c *client) call(ctx context.Context, r request, out any) error {
	resp, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("vercel API %s %s: reading the answer: %w", r.method, r.path, err)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("vercel API %s %s: unexpected answer: %w", r.method, r.path, err)
	}
	return nil
}
