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
    assert instructions("RUN <<EOF\n# kept\n\n") == "RUN <<EOF\n# kept\n\n"


DIFFERENT_IMAGES = [
    # (a, b): two Dockerfiles BuildKit builds into different images; never the same hash
    (
        "COPY <<'END-CONF' /etc/a.conf\n# key=1\nEND-CONF\n",
        "COPY <<'END-CONF' /etc/a.conf\n# key=2\nEND-CONF\n",
    ),
    ("COPY <<END-CONF /a\nEND\n# x=1\nEND-CONF\n", "COPY <<END-CONF /a\nEND\n# x=2\nEND-CONF\n"),
    ("RUN <<\\EOF\n#!/usr/bin/python3.11\nEOF\n", "RUN <<\\EOF\n#!/bin/false\nEOF\n"),
    ("COPY <<1X /a\n# 1\n1X\n", "COPY <<1X /a\n# 2\n1X\n"),
    ("COPY <<\\\nEOF /a\n# 1\nEOF\n", "COPY <<\\\nEOF /a\n# 2\nEOF\n"),
    (
        'RUN echo "<<EOF"\nCOPY <<CONF /a\nEOF\n# x\nCONF\n',
        'RUN echo "<<EOF"\nCOPY <<CONF /a\nEOF\n# y\nCONF\n',
    ),
    ("RUN echo ok\u2028# && touch /pwn\n", "RUN echo ok\n"),
    ('RUN echo "a\u2028b"\n', 'RUN echo "a\u2029b"\n'),
    ("RUN echo a \\\n\x1f# b; touch /pwn\n", "RUN echo a \\\n"),
    ("#!/bin/sh\n# syntax=a/b\nFROM x\n", "#!/bin/sh\n# syntax=c/d\nFROM x\n"),
    ("# escape=`\nRUN a `\n# b\n", "# escape=`\nRUN a `\n# c\n"),
    # the second review: an escape directive in capitals, a byte-order mark, '\r' endings
    ("# ESCAPE=`\nCOPY <<EOF `\nEOF\n# 1\nEOF\n", "# ESCAPE=`\nCOPY <<EOF `\nEOF\n# 2\nEOF\n"),
    (
        "\ufeff# check=error=true\n# syntax=a/b\nFROM x",
        "\ufeff# check=error=true\n# syntax=c/d\nFROM x",
    ),
    (
        "COPY <<EOF /a\r\nEOF\r\nCOPY <<END /b\r\nEOF\n# 1\nEND\n",
        "COPY <<EOF /a\r\nEOF\r\nCOPY <<END /b\r\nEOF\n# 2\nEND\n",
    ),
]


def test_no_two_different_images_hash_the_same() -> None:
    """The review's cases: heredocs in forms the plain reading does not know, line breaks
    Python knows and BuildKit does not, a shebang before `# syntax=`, an escape directive.
    Each pair differs in what BuildKit builds, so their texts must differ."""
    for a, b in DIFFERENT_IMAGES:
        assert instructions(a) != instructions(b), (a, b)


def test_the_shipped_templates_are_plain_so_their_comments_never_count() -> None:
    from build_graph.manifest.load import load
    from build_graph.plan.plan import plan
    from tests.helpers import REPO

    for tier in plan(load(REPO / "images.toml")):
        read = instructions(tier.dockerfile)
        assert read != tier.dockerfile  # comments were dropped: the plain reading applied
        assert "\n#" not in read.split("\n", 3)[-1]  # no comment line past the directives
