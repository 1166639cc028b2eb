"""The docs' generated statements: written from the code, and a stale one caught."""

from __future__ import annotations

import pytest

from clientlab.output import docs


def test_every_generated_statement_in_the_docs_is_current():
    # `clientlab docs` rewrites them; a change to a manifest or an experiment must come with it
    assert docs.update(check=True) == []


def test_a_stale_block_is_rewritten_and_named():
    text = "before\n<!-- generated:default-drivers -->\nten drivers, once\n<!-- /generated:default-drivers -->\nafter\n"
    new, changed = docs.rewrite(text)
    assert changed == ["default-drivers"]
    assert new.startswith("before\n<!-- generated:default-drivers -->\nA plain `clientlab run` takes ")
    assert new.endswith("<!-- /generated:default-drivers -->\nafter\n")
    assert docs.rewrite(new) == (new, [])


def test_a_block_without_a_generator_is_named():
    with pytest.raises(KeyError, match="generated:nonesuch"):
        docs.rewrite("<!-- generated:nonesuch -->\nx\n<!-- /generated:nonesuch -->\n")


def test_the_readme_reads_in_a_terminal_of_80_columns():
    from clientlab import paths

    long = [(i, line) for i, line in enumerate((paths.ROOT / "README.md").read_text().splitlines(), 1)
            if len(line) > 80 and "](" not in line]
    assert long == []
