"""The one reader of the lab's data files: every kind of bad file is refused with a message that
names the file and the problem, and nothing blocks, hangs or reads without end."""

from __future__ import annotations

import os
import threading

import pytest

from clientlab import datafiles, errors
from clientlab.datafiles import read_named_toml, read_toml
from clientlab.errors import LabInputError


def refused(path, match: str) -> str:
    with pytest.raises(LabInputError) as info:
        read_toml(path, "scenario")
    message = str(info.value)
    assert message.startswith(errors.shown(path)), message
    assert match in message, message
    return message


def test_a_file_that_is_not_utf8_is_refused_with_the_byte_and_where(tmp_path):
    path = tmp_path / "latin.toml"
    path.write_bytes('description = "ok"\nname = "caf\xe9"\n'.encode("latin-1"))
    message = refused(path, "not UTF-8 text (byte 0xe9 at line 2, column 12)")
    assert "save it as UTF-8" in message


def test_binary_garbage_is_refused_as_not_text(tmp_path):
    path = tmp_path / "garbage.toml"
    path.write_bytes(bytes(range(256)) * 4)
    refused(path, "not UTF-8")


def test_utf8_that_is_not_toml_says_where_toml_breaks(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text('description = "x\n')
    refused(path, "not valid TOML: ")


@pytest.mark.parametrize("text", ["a = " + "[" * 20_000 + "]" * 20_000, "a = " + "{b = " * 5_000 + "1" + "}" * 5_000,
                                  "a = " + "[" * 40 + "]" * 40, ".".join(["a"] * 200) + " = 1"])
def test_deep_nesting_is_refused_without_a_recursion_error(tmp_path, text):
    path = tmp_path / "deep.toml"
    path.write_text(text)
    refused(path, "nested more than 16 tables or arrays deep")


def test_an_integer_of_thousands_of_digits_is_refused(tmp_path):
    path = tmp_path / "huge.toml"
    path.write_text("timeout_s = 1" + "0" * 5000 + "\n")
    refused(path, "a number with thousands of digits")


def test_an_integer_past_64_bits_is_refused_naming_the_field(tmp_path):
    path = tmp_path / "big.toml"
    path.write_text("[params]\ncount = 123456789012345678901234567890\n")
    refused(path, "field 'params.count': the number '123456789012345678901234567890' is too large")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "+nan"])
def test_nan_and_inf_are_refused_naming_the_field(tmp_path, value):
    path = tmp_path / "nan.toml"
    path.write_text(f"[client]\noptions = {{ x = [{value}] }}\n")
    refused(path, "field 'client.options.x.0': ")


@pytest.mark.parametrize("content", [b"", b"   \n\n\t\n"])
def test_an_empty_file_is_refused_as_empty(tmp_path, content):
    path = tmp_path / "empty.toml"
    path.write_bytes(content)
    refused(path, "the file is empty")


def test_a_folder_where_a_file_is_expected_is_refused(tmp_path):
    path = tmp_path / "folder.toml"
    path.mkdir()
    refused(path, "it is a folder, not a file")


def test_a_broken_link_is_refused(tmp_path):
    path = tmp_path / "dangling.toml"
    path.symlink_to(tmp_path / "nowhere")
    refused(path, "no such file (a broken link?)")


def test_a_named_pipe_is_refused_without_blocking(tmp_path):
    path = tmp_path / "fifo.toml"
    os.mkfifo(path)
    done = threading.Event()
    result: list = []

    def read() -> None:
        try:
            read_toml(path, "scenario")
        except LabInputError as exc:
            result.append(str(exc))
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(5), "reading a FIFO blocked"
    assert "not a regular file" in result[0]


def test_a_device_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "zero.toml"
    path.symlink_to("/dev/zero")  # would never end
    refused(path, "not a regular file (a pipe, socket or device)")


def test_a_file_past_the_size_limit_is_refused_before_reading(tmp_path):
    path = tmp_path / "big.toml"
    with open(path, "wb") as f:
        f.truncate(datafiles.MAX_FILE_BYTES + 1)
    refused(path, "a scenario file is at most 1024 KiB")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_refused(tmp_path):
    path = tmp_path / "secret.toml"
    path.write_text('description = "x"\n')
    path.chmod(0)
    refused(path, "Permission denied")


def test_an_unreadable_file_is_refused_even_as_root(tmp_path, monkeypatch):
    path = tmp_path / "secret.toml"
    path.write_text('description = "x"\n')
    real_open = os.open

    def denied(p, *args, **kwargs):
        if str(p) == str(path):
            raise PermissionError(13, "Permission denied")
        return real_open(p, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    refused(path, "cannot read scenario: Permission denied")


@pytest.mark.parametrize("text,field", [('description = "a\\u0000b"', "description"),
                                        ('description = "\\u001b[2J"', "description"),
                                        ('"a\\nb" = 1', "a\\nb"),
                                        ('[params]\n"\\u009b" = 1', "params.\\x9b")])
def test_control_characters_in_values_and_keys_are_refused(tmp_path, text, field):
    path = tmp_path / "control.toml"
    path.write_text(text + "\n")
    message = refused(path, f"field '{field}'")
    assert "\x1b" not in message and "\x00" not in message  # the message itself prints safely


def test_a_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "bom.toml"
    path.write_bytes('\ufeffdescription = "x"\n'.encode())
    assert read_toml(path, "scenario") == {"description": "x"}


def test_a_file_name_that_is_not_utf8_is_shown_escaped(tmp_path):
    path = tmp_path / os.fsdecode(b"bad-\xff.toml")
    path.write_text('name = "other"\n')
    with pytest.raises(LabInputError) as info:
        read_named_toml(path, "scenario")
    message = str(info.value)
    assert "bad-\\xff.toml" in message and "must match the file name" in message
    message.encode("utf-8")  # printable anywhere (no lone surrogates)
