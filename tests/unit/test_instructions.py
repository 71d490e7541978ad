"""What of a Dockerfile the tag hashes: instructions, not comments; heredoc bodies whole."""

from __future__ import annotations

from build_graph.plan.hashing import instructions


def test_comments_and_blank_lines_go_directives_and_instructions_stay() -> None:
    text = (
        "# syntax=docker/dockerfile:1.7\n"
        "# check=error=true\n"
        "# Locked in gpu.pylock/base.linux-amd64.toml\n"
        "FROM scratch\n"
        "\n"
        "RUN a \\\n"
        "    # a comment inside a continued line is dropped by BuildKit too\n"
        "    && b\n"
        "   # indented comment\n"
    )
    assert instructions(text) == (
        "# syntax=docker/dockerfile:1.7\n# check=error=true\nFROM scratch\nRUN a \\\n    && b"
    )


def test_a_directive_after_a_comment_is_a_comment() -> None:
    # BuildKit stops looking for directives at the first comment, blank line or instruction
    assert instructions("# hello\n# syntax=x\nFROM scratch\n") == "FROM scratch"
    assert instructions("\n# syntax=x\nFROM scratch\n") == "FROM scratch"


def test_heredoc_bodies_are_content_and_kept_byte_for_byte() -> None:
    text = (
        "FROM scratch\n"
        "RUN <<EOF\n"
        "#!/bin/sh\n"
        "\n"
        "# this line is in the script\n"
        "EOF\n"
        "# this one is a comment\n"
        "COPY <<-'ONE' /a <<\"TWO\" /b\n"
        "\t# one\n"
        "\tONE\n"
        "# two\n"
        "TWO\n"
        "# gone\n"
    )
    assert instructions(text) == (
        "FROM scratch\nRUN <<EOF\n#!/bin/sh\n\n# this line is in the script\nEOF\n"
        "COPY <<-'ONE' /a <<\"TWO\" /b\n\t# one\n\tONE\n# two\nTWO"
    )


def test_a_heredoc_comment_change_changes_the_text_and_a_real_comment_does_not() -> None:
    body = "FROM scratch\nRUN <<EOF\n# {}\nEOF\n# {}\n"
    assert instructions(body.format("a", "x")) != instructions(body.format("b", "x"))
    assert instructions(body.format("a", "x")) == instructions(body.format("a", "y"))


def test_an_unterminated_heredoc_keeps_everything_after_it() -> None:
    assert instructions("RUN <<EOF\n# kept\n\n") == "RUN <<EOF\n# kept\n"
