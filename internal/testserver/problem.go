package testserver

// Problem type suffixes of the reference API, beside the protocol's own
// (package server).
const (
	ProblemNotFound         = "not-found"
	ProblemMethodNotAllowed = "method-not-allowed"
	ProblemUnsupportedMedia = "unsupported-media-type"
	ProblemInjectedFault    = "injected-fault"
)
