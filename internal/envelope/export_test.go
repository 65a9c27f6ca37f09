package envelope

// CacheLen reports how many derived keys s holds, for tests.
func CacheLen(s *Sealer) int { return s.cache.len() }
