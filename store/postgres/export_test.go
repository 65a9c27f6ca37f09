package postgres

// For the external tests.
const (
	EntriesTable   = entriesTable
	MaxMessageSize = maxMessageSize
)
