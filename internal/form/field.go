package form

// Check validates one value of f and returns it normalized, as Validate
// does for a whole form: a UI checks each field as it is typed.
func (f *Field) Check(v any) (any, error) {
	return f.validate(v, pointer(f.Name))
}
