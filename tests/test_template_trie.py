"""The regexes a set of line templates writes: "a line on none of them that holds a factor", against its definition."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from logphase.logs.fast.scanners import HsScanner, ReScanner, Scanner, accelerated, split_long
from logphase.logs.fast.templates import DIGIT, RUN, TemplateTrie, atoms_regex, holds

# A small alphabet, so that templates, factors and lines share prefixes and overlap often; atoms are
# its bytes, the digit class and a run of digits (a trimmed fraction)
ALPHABET = b"ab1 ]"
atoms = st.lists(st.sampled_from([*ALPHABET, DIGIT, RUN]), min_size=1, max_size=6).map(tuple)
texts = st.binary(min_size=0, max_size=10).map(lambda raw: bytes(ALPHABET[byte % len(ALPHABET)] for byte in raw))


def trie_of(templates: list[tuple[int, ...]]) -> tuple[TemplateTrie, list[tuple[int, ...]]]:
    """The templates a TemplateSet would keep: none a prefix of another, no digit class beside a digit."""
    kept: list[tuple[int, ...]] = []
    for template in templates:
        trial = TemplateTrie()
        if all(trial.add(t) for t in [*kept, template]) and not any(
            t[: len(template)] == template or template[: len(t)] == t for t in kept
        ):
            kept.append(template)
    trie = TemplateTrie()
    for template in kept:
        trie.add(template)
    return trie, kept


def off_template_with(trie: TemplateTrie, factor: bytes) -> list[bytes]:
    """The two patterns CandidateScan compiles for a set of host templates and one factor."""
    patterns = []
    rest = trie.complement(ends=False)
    if rest is not None:
        patterns.append(b"^" + rest + b"[^\\n]*" + re.escape(factor))
    on_path = trie.factor_on_path(factor)
    if on_path is not None:
        patterns.append(b"^" + on_path)
    return patterns


@st.composite
def near_lines(draw: st.DrawFn, templates: list[tuple[int, ...]]) -> bytes:
    """A line of the alphabet, often a template written out (a digit class as `1`, a run as one to
    three `1`s) with a byte changed, cut or added: the lines whose answer a wrong regex gets wrong."""
    line = draw(texts)
    if draw(st.booleans()) and templates:
        template: tuple[int, ...] = draw(st.sampled_from(templates))
        written = b"".join(
            b"1" * draw(st.integers(1, 3)) if atom == RUN else b"1" if atom == DIGIT else bytes([atom])
            for atom in template
        )
        at = draw(st.integers(0, len(written)))
        line = written[:at] + line[:2] + written[at + draw(st.integers(0, 1)) :] + line[2:]
    return line


@settings(max_examples=600, deadline=None)
@given(templates=st.lists(atoms, min_size=1, max_size=4), factor=texts.filter(bool), data=st.data())
def test_a_line_is_found_exactly_when_it_is_on_no_template_and_holds_the_factor(
    templates: list[tuple[int, ...]], factor: bytes, data: st.DataObject
) -> None:
    # GIVEN host templates (bytes, digit classes, digit runs) and a factor of a steady rule
    trie, kept = trie_of(templates)
    line = data.draw(near_lines(kept))
    if len(line) > 1 and data.draw(st.booleans()):  # often a factor the line holds, where it is hard to tell
        start = data.draw(st.integers(0, len(line) - 1))
        factor = line[start : data.draw(st.integers(start + 1, len(line)))]
    patterns = off_template_with(trie, factor)
    # WHEN a line is searched with the two patterns
    found = any(re.search(pattern, line, re.MULTILINE) for pattern in patterns)
    # THEN it is found exactly when it starts with none of the templates and holds the factor
    on_a_template = any(re.match(atoms_regex(t), line) for t in kept)
    assert found == (not on_a_template and factor in line)


def test_an_nccl_line_whose_template_ends_with_the_factor_is_not_found() -> None:
    # GIVEN NCCL's template, whose prefix ends with the factor `NCCL INFO ` (the NCCL pack's prefix)
    template = tuple(DIGIT if chr(b).isdigit() else b for b in b"gpu-node-17:41214:41338 [2] NCCL INFO ")
    trie = TemplateTrie()
    trie.add(template)
    patterns = off_template_with(trie, b"NCCL INFO ")
    on_it = b"gpu-node-17:41214:41338 [2] NCCL INFO Channel 08/1 : 2[2] -> 3[3] via P2P/CUMEM/read"
    cut_short = b"gpu-node-17:41214:41338 [2] NCCL INFO"  # ends inside the template: no `NCCL INFO ` in it
    off_it = [
        b"gpu-node-17:41214:41338 [2] NCCL WARN Cuda failure, NCCL INFO follows",  # leaves it, factor after
        b"gpu-node-17 NCCL INFO comm 0x5 rank 0 nranks 8",  # leaves it inside the prefix
        b"NCCL INFO Bootstrap : Using eth0",  # leaves it at its first byte
    ]
    lines = [on_it, cut_short, *off_it]
    data = b"\n".join(lines) + b"\n"
    scanners: list[Scanner] = [ReScanner([(p, False) for p in patterns])]
    if accelerated():
        scanners.append(HsScanner([(p, False) for p in patterns]))
    for scanner in scanners:
        # WHEN the lines are scanned
        hits = {data.rfind(b"\n", 0, stop) + 1 for _, stop in scanner.matches(data, 0, len(data))}
        # THEN the lines that leave the template and hold the factor are found, by each scanner
        found = sorted(data[start : data.index(b"\n", start)] for start in hits)
        assert found == sorted(off_it)


def test_an_envelope_holds_a_factor_where_some_line_of_it_would() -> None:
    # GIVEN a journald envelope's atoms (`Mar 02 09:16:00 gpu-node-17 sglang[41190]: `, digits as classes)
    envelope = tuple(DIGIT if chr(b).isdigit() else b for b in b"Mar 02 09:16:00 gpu-node-17 sglang[41190]: ")
    # WHEN asked which factors a line on it holds inside it
    # THEN the unit name and digit runs are held; text across its end or never in it is not
    assert holds(envelope, b"sglang")
    assert holds(envelope, b"[12345]")
    assert holds(envelope, b"node-99")
    assert not holds(envelope, b"]: Decode batch")
    assert not holds(envelope, b"NCCL INFO ")
    assert not holds(envelope, b"gpu-node-1a")


@settings(max_examples=300, deadline=None)
@given(template=atoms, text=texts.filter(bool))
def test_atoms_hold_a_text_exactly_when_some_line_they_stand_for_does(template: tuple[int, ...], text: bytes) -> None:
    # GIVEN atoms and a text of the alphabet (whose only digit is `1`)
    # WHEN every line the atoms stand for is written with `1` for a digit class and runs of `1` up to
    # one longer than the text (a longer run holds nothing a shorter one lacks)
    lines = [b""]
    for atom in template:
        options = (
            [b"1" * n for n in range(1, len(text) + 2)] if atom == RUN else [b"1" if atom == DIGIT else bytes([atom])]
        )
        lines = [line + option for line in lines for option in options]
    # THEN `holds` says whether one of them holds the text
    assert holds(template, text) == any(text in line for line in lines)


@settings(max_examples=300, deadline=None)
@given(
    templates=st.lists(atoms, min_size=1, max_size=5),
    factor=texts.filter(bool),
    line=texts,
    limit=st.integers(1, 200),
)
def test_a_pattern_cut_to_a_length_matches_the_lines_it_matched(
    templates: list[tuple[int, ...]], factor: bytes, line: bytes, limit: int
) -> None:
    # GIVEN the patterns of a set of templates (their complement, the factor off them), cut into
    # pieces of at most `limit` bytes where they can be cut (hyperscan refuses 16000 bytes)
    trie, _ = trie_of(templates)
    rest = trie.complement(ends=True)
    patterns = off_template_with(trie, factor) + ([b"^" + rest] if rest is not None else [])
    for pattern in patterns:
        pieces = split_long(pattern, limit)
        # WHEN a line is searched with the pattern and with its pieces
        # THEN one of the pieces matches it exactly when the pattern does, and a piece over the
        # limit is one that cannot be cut
        assert any(re.search(piece, line, re.MULTILINE) for piece in pieces) == bool(
            re.search(pattern, line, re.MULTILINE)
        )
        assert all(len(piece) <= limit or split_long(piece, limit) == [piece] for piece in pieces)
