package main

import (
	"bufio"
	"strings"
	"testing"
)

func TestSecretComesAsTheFirstLineOfStdin(t *testing.T) {
	for input, ok := range map[string]bool{
		"0123456789abcdef\n": true, "0123456789abcdef\r\nmore": true, "0123456789abcdef": true,
		"": false, "\n": false, "short\n": false, "0123456789 abcdef\n": false, strings.Repeat("a", 300) + "\n": false,
	} {
		_, err := readSecret(bufio.NewReader(strings.NewReader(input)))
		if (err == nil) != ok {
			t.Errorf("%q: err %v", input, err)
		}
	}
}
