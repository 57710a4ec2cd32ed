package domain

// Field is a value from a request that distinguishes "not sent" (Set false)
// from "sent as null" (Null true), which PATCH and upserts need.
type Field[T any] struct {
	Set   bool
	Null  bool
	Value T
}

// Val returns a Field holding v, for callers and tests building commands.
func Val[T any](v T) Field[T] { return Field[T]{Set: true, Value: v} }

// Ptr returns nil for unsent or null fields, else a pointer to the value.
func (f Field[T]) Ptr() *T {
	if !f.Set || f.Null {
		return nil
	}
	v := f.Value
	return &v
}
