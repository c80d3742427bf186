// Command sizeidem is the smallest program that retries a POST safely with
// idem: one Client's Transport in an http.Client, nothing else of the
// module. BENCHMARKS.md compares the size of its binary with
// sizeretryablehttp, the same program on go-retryablehttp.
//
//	sizeidem URL
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/idemkit/idem"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sizeidem URL")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "sizeidem:", err)
		os.Exit(1)
	}
}

func run(url string) error {
	client, err := idem.New()
	if err != nil {
		return err
	}
	defer client.Close()
	hc := &http.Client{Transport: client.Transport(), Timeout: 30 * time.Second}
	resp, err := hc.Post(url, "application/json", strings.NewReader(`{"amount": 100, "currency": "EUR"}`))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	fmt.Println(resp.Status)
	return nil
}
