package labdriver

import (
	"errors"
	"regexp"
	"strings"
)

var (
	capsKey    = regexp.MustCompile(`(?m)^\s*capabilities\s*=\s*\[`)
	quotedName = regexp.MustCompile(`"([a-z0-9_]+)"`)
)

// manifestCapabilities reads the `capabilities = [...]` list of a driver.toml (the one TOML
// field the helper needs; the lab itself validates the whole manifest).
func manifestCapabilities(manifest []byte) (map[string]bool, error) {
	text := string(manifest)
	loc := capsKey.FindStringIndex(text)
	if loc == nil {
		return nil, errors.New("no capabilities list")
	}
	var list strings.Builder
	for _, line := range strings.SplitAfter(text[loc[1]:], "\n") {
		if i := strings.Index(line, "#"); i >= 0 { // a comment (capability names hold no '#')
			line = line[:i]
		}
		if i := strings.Index(line, "]"); i >= 0 {
			list.WriteString(line[:i])
			caps := map[string]bool{}
			for _, m := range quotedName.FindAllStringSubmatch(list.String(), -1) {
				caps[m[1]] = true
			}
			return caps, nil
		}
		list.WriteString(line)
	}
	return nil, errors.New("capabilities list is not closed")
}
