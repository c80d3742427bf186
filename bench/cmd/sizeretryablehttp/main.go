// Command sizeretryablehttp is sizeidem written with go-retryablehttp: a
// POST with a hand-set idempotency key, retried by the library's
// http.Client. BENCHMARKS.md compares the sizes of the two binaries.
//
//	sizeretryablehttp URL
package main

import (
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sizeretryablehttp URL")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "sizeretryablehttp:", err)
		os.Exit(1)
	}
}

func run(url string) error {
	rc := retryablehttp.NewClient()
	rc.Logger = nil
	hc := rc.StandardClient()
	hc.Timeout = 30 * time.Second
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"amount": 100, "currency": "EUR"}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", rand.Text())
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	fmt.Println(resp.Status)
	return nil
}
