package elicit

// SetTaskBounds sets the bounds of the tasks a node runs at once, for the
// tests, and returns a func that restores them.
func SetTaskBounds(total, perClient int) (restore func()) {
	t, c := maxTasks, maxTasksPerClient
	maxTasks, maxTasksPerClient = total, perClient
	return func() { maxTasks, maxTasksPerClient = t, c }
}
