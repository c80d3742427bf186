package testserver

import "github.com/idemkit/idem/server"

// The protocol layer lives in package server; the reference server and
// its callers (idem serve, idemtest, bench) keep these names for it.
type (
	Scope       = server.Scope
	RecordState = server.RecordState
	Response    = server.Response
	Record      = server.Record
	Reservation = server.Reservation
	Completion  = server.Completion
	Held        = server.Held
	Problem     = server.Problem
	Idempotency = server.Middleware
	// MemoryOption configures a MemoryStore.
	MemoryOption = server.MemoryOption
)

const (
	StateReserved           = server.StateReserved
	StateCompleted          = server.StateCompleted
	DefaultReservationGrace = server.DefaultReservationGrace
	DefaultLease            = server.DefaultLease
	DefaultRetention        = server.DefaultRetention
	DefaultMaxBody          = server.DefaultMaxBody
	DefaultSweepInterval    = server.DefaultSweepInterval
	DefaultSweepBatch       = server.DefaultSweepBatch
	KeyHeader               = server.KeyHeader
	ReplayedHeader          = server.ReplayedHeader
	ResourceIDHeader        = server.ResourceIDHeader
	MaxKeyLength            = server.MaxKeyLength
	ProblemTypePrefix       = server.ProblemTypePrefix
	ProblemMissingKey       = server.ProblemMissingKey
	ProblemInvalidKey       = server.ProblemInvalidKey
	ProblemKeyReused        = server.ProblemKeyReused
	ProblemInProgress       = server.ProblemInProgress
	ProblemStoreUnavailable = server.ProblemStoreUnavailable
	ProblemInvalidRequest   = server.ProblemInvalidRequest
	ProblemBodyTooLarge     = server.ProblemBodyTooLarge
	ProblemUnauthorized     = server.ProblemUnauthorized
	ProblemInternal         = server.ProblemInternal
)

var (
	ErrFenced          = server.ErrFenced
	ErrStoreFull       = server.ErrStoreFull
	ErrMissingKey      = server.ErrMissingKey
	ErrInvalidKey      = server.ErrInvalidKey
	ParseKey           = server.ParseKey
	KeyHash            = server.KeyHash
	Fingerprint        = server.Fingerprint
	WriteProblem       = server.WriteProblem
	EncodeHeader       = server.EncodeHeader
	DecodeHeader       = server.DecodeHeader
	ValidateCompletion = server.ValidateCompletion
	RunSweeper         = server.RunSweeper
	HeldFrom           = server.HeldFrom
	WithHeld           = server.WithHeld
	WithClock          = server.WithClock
	// WithReservationGrace sets a MemoryStore's reservation grace.
	WithReservationGrace = server.WithReservationGrace
	// WithCapacity bounds a MemoryStore's records, and its payments and
	// operations as many.
	WithCapacity = server.WithCapacity
)
