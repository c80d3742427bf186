package redisstore

import (
	"fmt"
	"strconv"
	"time"

	"github.com/idemkit/idem/server"
)

// parseHashRecord builds a record from an HGETALL reply: the hash form
// of the records of earlier versions (fields state, token, lease, fp,
// created, and once completed expires, status, header as
// server.EncodeHeader wrote it, body, rid), which the scripts still read
// so that a store upgraded in place keeps its keys.
func parseHashRecord(scope server.Scope, key string, flat []any) (*server.Record, error) {
	f := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		name, _ := flat[i].(string)
		value, _ := flat[i+1].(string)
		f[name] = value
	}
	rec := &server.Record{
		Scope:       scope,
		Key:         key,
		Fingerprint: f["fp"],
		State:       server.RecordState(f["state"]),
		Token:       f["token"],
	}
	var err error
	if rec.LeaseExpires, err = millis(f["lease"]); err != nil {
		return nil, fmt.Errorf("stored lease: %w", err)
	}
	if rec.CreatedAt, err = millis(f["created"]); err != nil {
		return nil, fmt.Errorf("stored creation time: %w", err)
	}
	if rec.ExpiresAt, err = millis(f["expires"]); err != nil {
		return nil, fmt.Errorf("stored expiry: %w", err)
	}
	if rec.State == server.StateCompleted {
		if rec.Response, err = parseHashResponse(f); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

func parseHashResponse(f map[string]string) (*server.Response, error) {
	status, err := strconv.Atoi(f["status"])
	if err != nil {
		return nil, fmt.Errorf("stored status: %w", err)
	}
	resp := &server.Response{Status: status, Body: []byte(f["body"]), ResourceID: f["rid"]}
	if resp.Header, err = server.DecodeHeader([]byte(f["header"])); err != nil {
		return nil, err
	}
	return resp, nil
}

// millis parses Unix milliseconds; an absent field is the zero time.
func millis(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(ms), nil
}
