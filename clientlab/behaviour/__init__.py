"""Behaviour cases (`behaviours/*.toml`): what a client does when the server misbehaves (cases),
and `clientlab behave`, which runs every chosen driver on them (behave)."""
