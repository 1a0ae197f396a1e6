"""The regexes a set of line templates writes (a line on none of them, one on another that may hold
a factor), against their definitions."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logphase.frames import TRIGGER
from logphase.logs.fast.plan import plan_for
from logphase.logs.fast.scanners import HsScanner, ReScanner, Scanner, accelerated, split_long, trie_regex
from logphase.logs.fast.templates import (
    DIGIT,
    RUN,
    Template,
    TemplateSet,
    TemplateTrie,
    atoms_regex,
    holds,
    off_hosts,
)
from logphase.packs import PackSet

# A small alphabet, so that templates, factors and lines share prefixes and overlap often; atoms are
# its bytes, the digit class and a run of digits (a trimmed fraction)
ALPHABET = b"ab1 ]"
atoms = st.lists(st.sampled_from([*ALPHABET, DIGIT, RUN]), min_size=1, max_size=6).map(tuple)
texts = st.binary(min_size=0, max_size=10).map(lambda raw: bytes(ALPHABET[byte % len(ALPHABET)] for byte in raw))


def trie_of(templates: list[tuple[int, ...]], *, nest: bool = False) -> tuple[TemplateTrie, list[tuple[int, ...]]]:
    """The templates a TemplateSet would keep: each once, no digit class beside a digit, none a
    prefix of another unless `nest` (templates that nest)."""
    kept: list[tuple[int, ...]] = []
    for template in templates:
        trial = TemplateTrie()
        if template not in kept and all(trial.add(t, nest=nest) for t in [*kept, template]):
            kept.append(template)
    trie = TemplateTrie()
    for template in kept:
        trie.add(template, nest=nest)
    return trie, kept


def templates_of(kept: list[tuple[int, ...]], envelopes: list[int]) -> list[Template]:
    """Templates of these atoms, each with an envelopes' prefix of the given share of the atoms
    after its last run (runs are only ever in the envelopes' prefix)."""
    made = []
    for atoms, share in zip(kept, envelopes, strict=False):
        after_runs = max((at + 1 for at, atom in enumerate(atoms) if atom == RUN), default=0)
        made.append(Template(atoms, None, "none", envelope=after_runs + share % (len(atoms) - after_runs + 1)))
    return made


def templates_of_line(templates: list[Template], line: bytes) -> list[Template]:
    return [t for t in templates if re.match(atoms_regex(t.atoms), line)]


def template_of_line(templates: list[Template], line: bytes) -> Template | None:
    """The longest template the line is on (where templates nest, the line is on each it starts with)."""
    return max(templates_of_line(templates, line), key=lambda t: len(t.atoms), default=None)


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


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(
    templates=st.lists(atoms, min_size=1, max_size=4),
    envelopes=st.lists(st.integers(0, 6), min_size=4, max_size=4),
    chosen=st.lists(st.booleans(), min_size=4, max_size=4),
    factor=texts.filter(bool),
    nest=st.booleans(),
    data=st.data(),
)
def test_a_line_on_another_template_than_the_hosts_holding_the_factor_is_found(
    templates: list[tuple[int, ...]],
    envelopes: list[int],
    chosen: list[bool],
    factor: bytes,
    nest: bool,
    data: st.DataObject,
) -> None:
    # GIVEN templates (bytes, digit classes, digit runs; an envelopes' prefix; some extending others,
    # where they nest), some of them the hosts where a steady rule's runs with the factor are known,
    # and a line, often near a template
    _, kept = trie_of(templates, nest=nest)
    made = templates_of(kept, envelopes)
    hosts = [t for t, host in zip(made, chosen, strict=False) if host] or made[:1]
    line = data.draw(near_lines(kept))
    if len(line) > 1 and data.draw(st.booleans()):  # often a factor the line holds, where it is hard to tell
        start = data.draw(st.integers(0, len(line) - 1))
        factor = line[start : data.draw(st.integers(start + 1, len(line)))]
    pattern = off_hosts(made, hosts, [factor])
    rest = TemplateTrie()
    for template in kept:
        rest.add(template, nest=nest)
    complement = rest.complement(ends=True)
    # WHEN the line is searched with the hosts' pattern, and with the complement of all templates
    found = pattern is not None and re.search(pattern, line, re.MULTILINE) is not None
    off_all = complement is not None and re.match(complement, line) is not None
    on = template_of_line(made, line)
    # THEN a line on another template that holds the factor after its envelopes' prefix is found,
    # by the one or the other (a line on no template is read anyway)
    if on is not None and on not in hosts and factor in line[on.envelope_end(line) :]:
        assert found or off_all
    # ... a line on no template is found by the complement, and one on a template is not
    assert off_all == (on is None)
    # ... and a line on a host that holds the factor only after its template is not: its run is known
    # (unless it is also on a shorter template that is no host: found there, the matcher's check drops it)
    if on is not None and all(t in hosts for t in templates_of_line(made, line)):
        length = re.match(atoms_regex(on.atoms), line)
        assert length is not None
        if factor not in line[: length.end() + len(factor) - 1]:
            assert not found


def test_a_factor_from_where_the_line_leaves_the_hosts_across_its_template_s_end_is_found() -> None:
    # GIVEN the hosts' template `ab` and another, `aa`, and the factor `ab`
    host, other = Template(tuple(b"ab"), None, "none"), Template(tuple(b"aa"), None, "none")
    pattern = off_hosts([host, other], [host], [b"ab"])
    assert pattern is not None
    # WHEN lines on `aa` are searched: the factor from the byte where they leave `ab`, across the
    # end of `aa`; after it; nowhere after the envelope
    # THEN those that hold it are found
    assert re.search(pattern, b"aab", re.MULTILINE)
    assert re.search(pattern, b"aa-ab", re.MULTILINE)
    assert not re.search(pattern, b"aa-a", re.MULTILINE)


def test_a_factor_on_a_template_a_host_extends_is_found_from_its_end_on() -> None:
    # GIVEN the hosts' template `[S] INFO:` (uvicorn's inside SGLang's prefix), SGLang's own `[S] ` that
    # it extends, no host, and the factor `POST` (found by the property test with `aa`, `a` and `b`)
    host, other = Template(tuple(b"[S] INFO:"), None, "none"), Template(tuple(b"[S] "), None, "none")
    pattern = off_hosts([host, other], [host], [b"POST"])
    assert pattern is not None
    # WHEN lines on `[S] ` alone and on the host are searched
    # THEN a line that holds the factor from the byte where it leaves the host's template is found, as is one
    # whose factor starts on the way there, and one that ends there; the host's own lines are not
    assert re.search(pattern, b"[S] POST /generate", re.MULTILINE)
    assert re.search(pattern, b"[S] IPOST", re.MULTILINE)
    assert re.search(pattern, b"[S] INPOST x", re.MULTILINE)
    assert not re.search(pattern, b"[S] INFO: POST /generate", re.MULTILINE)
    assert not re.search(pattern, b"[S] Load weight end.", re.MULTILINE)
    # ... and the template walk says the same with its first byte as a factor (`I` is the host's own next byte)
    short = off_hosts([host, other], [host], [b"I"])
    assert short is not None
    assert re.search(short, b"[S] IN", re.MULTILINE)
    assert not re.search(short, b"[S] INFO: ok", re.MULTILINE)


def test_templates_that_nest_are_both_kept_and_a_line_is_on_the_longest() -> None:
    # GIVEN SGLang's own prefix `[stamp] ` and uvicorn's inside it `[stamp] INFO:     `: one rank
    # (none), one stamp at the same bytes, on the same clock
    stamp = (*b"[", *[DIGIT] * 4, *b"] ")
    short = Template(stamp, None, "year", (1, "%Y", False, 4), prefixes=("sglang.prefix",))
    long = Template((*stamp, *b"INFO:     "), None, "year", (1, "%Y", False, 4), prefixes=("sglang.prefix", "uvicorn"))
    for first, second in ((short, long), (long, short)):
        # WHEN both are seen twice, in either order
        learned = TemplateSet(timed=frozenset({"sglang.prefix"}))
        for template in (first, first, second, second):
            learned.sight(template)
        # THEN both are known, and a line is on the longest it starts with
        assert learned.known == [first, second]
        regex = learned.regex()
        on = regex.match(b"[2026] INFO:     10.0.0.1 GET")
        assert on is not None and learned.known[on.lastindex - 1 if on.lastindex else 0] == long
        on = regex.match(b"[2026] Launch DP0")
        assert on is not None and learned.known[on.lastindex - 1 if on.lastindex else 0] == short
        assert regex.match(b"[202x] Launch") is None


def test_templates_that_would_tell_a_line_another_rank_or_stamp_do_not_nest() -> None:
    # GIVEN a template and one that extends it with a rank of its own, or a stamp of its own
    short = Template(tuple(b"(APIServer) "), None, "none", prefixes=("proc",))
    ranked = Template(tuple(b"(APIServer) [TP0] "), "TP0", "none", prefixes=("proc", "tp"))
    stamped_atoms = (*b"(APIServer) ", DIGIT, DIGIT, *b" ")
    stamped = Template(stamped_atoms, None, "year", (12, "%y", False, 2), prefixes=("proc", "ts"))
    for longer in (ranked, stamped):
        for first, second in ((short, longer), (longer, short)):
            # WHEN both are seen twice, in either order
            learned = TemplateSet(timed=frozenset({"ts"}))
            for template in (first, first, second, second):
                learned.sight(template)
            # THEN the second is refused: which the line is on would decide its rank or time
            assert learned.known == [first]
            assert second in learned.refused


def test_a_template_and_its_prefix_are_not_both_kept() -> None:
    # GIVEN a template and one that starts with it
    short, long = tuple(b"[TP0] "), tuple(b"[TP0] Decode ")
    for first, second in ((short, long), (long, short)):
        # WHEN both are added to a trie, in either order
        trie = TemplateTrie()
        # THEN the second is refused: a line on the longer one would be on both
        assert trie.add(first)
        assert not trie.add(second)


def test_an_nccl_line_whose_template_ends_with_the_factor_is_found_only_on_another_template() -> None:
    # GIVEN NCCL's INFO template, whose prefix ends with the factor `NCCL INFO ` (the NCCL pack's
    # prefix) and where its runs are known, and NCCL's WARN template, where they are not
    def nccl(level: bytes) -> Template:
        text = b"gpu-node-17:41214:41338 [2] NCCL " + level + b" "
        return Template(tuple(DIGIT if chr(b).isdigit() else b for b in text), None, "none")

    info, warn = nccl(b"INFO"), nccl(b"WARN")
    pattern = off_hosts([info, warn], [info], [b"NCCL INFO "])
    assert pattern is not None
    found_lines = [b"gpu-node-17:41214:41338 [2] NCCL WARN Cuda failure, NCCL INFO follows"]
    others = [
        b"gpu-node-17:41214:41338 [2] NCCL INFO Channel 08/1 : 2[2] -> 3[3] via P2P/CUMEM/read",  # on the host
        b"gpu-node-17:41214:41338 [2] NCCL WARN Cuda failure 2 'out of memory'",  # no factor
    ]
    data = b"\n".join(found_lines + others) + b"\n"
    scanners: list[Scanner] = [ReScanner([(pattern, False)])]
    if accelerated():
        scanners.append(HsScanner([(pattern, False)]))
    for scanner in scanners:
        # WHEN the lines are scanned
        hits = {data.rfind(b"\n", 0, stop) + 1 for _, stop in scanner.matches(data, 0, len(data))}
        # THEN the line on the WARN template that holds the factor is found, by each scanner
        found = sorted(data[start : data.index(b"\n", start)] for start in hits)
        assert found == found_lines


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


@pytest.mark.slow
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


few_bytes = st.binary(max_size=8).map(lambda raw: bytes(b"ab.*(\\\n"[byte % 7] for byte in raw))


@settings(max_examples=400, deadline=None)
@given(literals=st.lists(few_bytes.filter(bool), min_size=1, max_size=8), line=few_bytes)
def test_a_trie_of_literals_finds_a_line_exactly_when_one_of_them_is_in_it(literals: list[bytes], line: bytes) -> None:
    # GIVEN literals over a few bytes, regex syntax and a newline among them (they share prefixes and
    # hold each other often), and any line over the same bytes
    # WHEN the line is searched with their trie's regex
    found = re.search(trie_regex(literals), line) is not None
    # THEN it is found exactly when one literal is a substring of it
    assert found == any(literal in line for literal in literals)


@pytest.mark.slow
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
    trie, kept = trie_of(templates)
    rest = trie.complement(ends=True)
    made = templates_of(kept, [0] * len(kept))
    hosts = off_hosts(made, made[:1], [factor])
    patterns = ([hosts] if hosts is not None else []) + ([b"^" + rest] if rest is not None else [])
    for pattern in patterns:
        pieces = split_long(pattern, limit)
        # WHEN a line is searched with the pattern and with its pieces
        # THEN one of the pieces matches it exactly when the pattern does, and a piece over the
        # limit is one that cannot be cut
        assert any(re.search(piece, line, re.MULTILINE) for piece in pieces) == bool(
            re.search(pattern, line, re.MULTILINE)
        )
        assert all(len(piece) <= limit or split_long(piece, limit) == [piece] for piece in pieces)


# Pieces of lines, prefixes of every shipped kind among them, from which lines of no prefix and lines
# that a prefix rule parses are drawn
PIECES = [
    "2026-03-02 09:00:00,123",
    "2026-03-02T09:00:00.123Z ",
    " - ",
    "-",
    " - lmdeploy - INFO - engine.py:12 - ",
    "INFO ",
    "INFO:     ",
    "WARNING 03-02 09:00:00 [core.py:12] ",
    "[2026-03-02 09:00:00] ",
    "[2026-03-02 09:00:00 TP0] ",
    "[rank0]: ",
    "[",
    "] ",
    "W0302 09:00:00.123456 140145 torch/run.py:757] ",
    "host-1:123:456 [0] NCCL INFO ",
    "(VllmWorker rank=1 pid=12) ",
    "(raylet) ",
    "text_generation_router: ",
    '{"timestamp":"2026-03-02T09:00:00Z","level":"INFO","message":"',
    "[TRT-LLM] [I] ",
    "Decode batch. #running-req: 1",
    "Launch DP1 starting at GPU #4.",
    "9",
    "loss 2.31 at step 12",
    ": ",
    "x",
    " ",
]


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(st.sampled_from(PIECES), min_size=1, max_size=5))
def test_a_line_the_bare_starts_leave_unread_is_no_prefix_rules_and_no_steady_rules(
    packs: PackSet, pieces: list[str]
) -> None:
    # GIVEN the shipped packs' bare starts (no template known: every first byte is the bare starts')
    # and a line drawn from pieces of lines and prefixes
    plan = plan_for(packs, (TRIGGER,))
    assert plan.bare is not None
    unread = re.compile(b"^(?:" + b"|".join(plan.bare.options(frozenset())) + b")")
    line = "".join(pieces)
    # WHEN the line is not one of the options (the scan's complement leaves it unread)
    if unread.match(line.encode()) is not None:
        return
    # THEN no prefix rule parses it, and no steady rule matches it as its message
    fields, message = packs.split_prefix(line)
    assert fields.prefixes == () and message == line
    assert [rule.id for rule in plan.steady_rules.values() if rule.match(line) is not None] == []
