"""Tests for vthread.continuation: guard, tail, join, prompts and planning."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vthread.continuation import (
    DEFAULT_TAIL_LIMIT,
    MAX_REQUEST_CHARS,
    MIN_OVERLAP,
    Message,
    _longest_overlap,
    _longest_overlap_reference,
    append_continuation,
    build_continuation_messages,
    build_rewrite_messages,
    continuation_tail,
    extract_fragment,
    is_multi_page_request,
    plan_continuation,
)

# The estimator stated in docs/continuation.md: ceil(chars / 4) per message plus a fixed
# per-message overhead for the role markers a chat template adds.
MESSAGE_OVERHEAD = 4
CONTEXT_TOKENS = 4096
# The motivating case's request (docs/continuation.md, Observation), verbatim.
NOTE_REQUEST = (
    "lets create a web app, about dogs, with little write ups on each dog breed, use 10 dog "
    "breeds, 10 different pages, use css and styling"
)


def estimate(message: Message) -> int:
    """Chars/4 rounded up, plus a per-message overhead."""
    return math.ceil(len(message["text"]) / 4) + MESSAGE_OVERHEAD


def estimate_calibrated(message: Message) -> int:
    """Chars/2.25, the ratio implied by the case's 5,532-char draft needing 2,460 tokens."""
    return math.ceil(len(message["text"]) / 2.25) + MESSAGE_OVERHEAD


_BREEDS = (
    ("Labrador Retriever", "friendly, outgoing and eager to please; a family favourite"),
    ("German Shepherd", "loyal, confident and courageous; a tireless working dog"),
    ("Golden Retriever", "intelligent, devoted and gentle with children"),
    ("French Bulldog", "playful and adaptable, content in a small flat"),
    ("Beagle", "merry and curious, a scent hound led by its nose"),
    ("Poodle", "proud, clever and athletic, in three sizes"),
    ("Rottweiler", "calm, confident guardian with a loving heart"),
    ("Boxer", "bright, energetic and patient with its family"),
    ("Siberian Husky", "outgoing, mischievous sled dog built for cold"),
)
_HEAD = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Dog Breeds</title>
  <style>
    :root { --brand: #8a4b2a; --ink: #222; --paper: #fdf8f2; }
    body { font-family: Georgia, serif; color: var(--ink); background: var(--paper); }
    header { background: var(--brand); color: white; padding: 2rem; text-align: center; }
    nav a { color: white; margin: 0 .5rem; text-decoration: none; }
    .breed { max-width: 48rem; margin: 2rem auto; padding: 1rem 2rem; }
    .breed h2 { border-bottom: 2px solid var(--brand); }
    .facts { display: grid; grid-template-columns: 1fr 1fr; gap: .5rem; }
    footer { text-align: center; padding: 2rem; font-size: .9rem; }
  </style>
</head>
<body>
  <header><h1>Dog Breeds</h1><nav><a href="#labrador">Labrador</a></nav></header>
  <main>
"""
_CUT = '  <section class="breed" id="dachshund">\n    <h2>Dach'
_FILLER = "Every breed was shaped by the work people asked of it. "


def _section(index: int) -> str:
    name, blurb = _BREEDS[index % len(_BREEDS)]
    slug = f"{name.lower().replace(' ', '-')}-{index}"
    return (
        f'  <section class="breed" id="{slug}">\n'
        f"    <h2>{name}</h2>\n"
        f"    <p>The {name} is {blurb}.</p>\n"
        '    <div class="facts"><span>Size</span><span>Medium</span>'
        "<span>Energy</span><span>High</span></div>\n"
        "  </section>\n"
    )


def dog_draft(n_chars: int) -> str:
    """An unfinished dog-breed page of exactly n_chars, cut inside ``<h2>Dach``."""
    pad_open, pad_close = '  <p class="note">', "</p>\n"
    parts = [_HEAD]
    index = 0
    minimum_pad = len(pad_open) + len(pad_close) + 1
    while sum(map(len, parts)) + len(_section(index)) + len(_CUT) + minimum_pad <= n_chars:
        parts.append(_section(index))
        index += 1
    room = n_chars - sum(map(len, parts)) - len(_CUT) - len(pad_open) - len(pad_close)
    filler = (_FILLER * (room // len(_FILLER) + 1))[:room]
    draft = "".join(parts) + pad_open + filler + pad_close + _CUT
    assert len(draft) == n_chars
    return draft


_REST = """shund</h2>
    <p>The Dachshund is clever, lively and courageous, a badger hound on short legs.</p>
  </section>
  </main>
  <footer>Made with love for dogs.</footer>
</body>
</html>"""


def mock_model(messages: list[Message]) -> str:
    """A model that echoes the last two lines of the tail it was shown, then finishes."""
    shown = re.search(r"```+\n(.*)\n```+", messages[-1]["text"], re.DOTALL)
    assert shown is not None
    echo = "\n".join(shown.group(1).split("\n")[-2:])
    return f"Here is the rest of the page:\n```html\n{echo}{_REST}\n```\nEnjoy your site!"


# ---------------------------------------------------------------------------------------
# is_multi_page_request
# ---------------------------------------------------------------------------------------

MULTI_PAGE = (
    NOTE_REQUEST,
    "build a 10 page website",
    "make a website with multiple pages",
    "create a multi-page site for my bakery",
    "I want a multipage portfolio",
    "make a ten-page website about cats",
    "build a site with a page for each planet",
    "one page per team member, please",
    "create five separate pages for my band",
    "a web app with several pages: dashboard, settings, profile",
    "make twelve pages for my restaurant's website",
    "build a website with a dozen pages",
    "I need a 3-page site: home, menu, contact",
    "design a webapp with 4 different pages",
    "create an app with seven pages",
    "make a web site with twenty pages, one per recipe",
    "build home, about and contact pages",
    "create a home page and an about page for my bakery",
    "Build a website where each breed gets its own page",
    "make a 5 page html site",
    "Make two pages in HTML with a navbar linking them",
    "create a multi page web app",
    "website with different pages for each product",
    "make 15 linked pages about the solar system",
    "twenty-five pages for my online store website",
    "Create a Multi-Page Website For My Dentist Practice",
)
SINGLE_PAGE = (
    "make a single page website about dogs",
    "create one page about my cat",
    "build a landing page for my startup",
    "page 2 of my notes is wrong, fix it",
    "on page 10 the header overlaps the logo",
    "summarise these 10 pages of notes",
    "write 10 pages of an essay on dog breeds",
    "write a 10-page essay about climate change",
    "make a one-page website",
    "a single-page app for tracking habits",
    "make the header blue",
    "continue",
    "build a website about 10 dog breeds",
    "create a page listing 12 dog breeds",
    "add a contact form to my page",
    "my 3 pages of notes need a summary",
    "turn my 20 pages of notes into a one-page site",
    "make a multi-page PDF report",
    "write a 1 page website",
    "make the homepage responsive",
    "fix the link on the about page",
    "create a web page with two columns",
    "print the 5 pages of the report",
    "build a landing page with 3 sections",
    "write 1.5 pages about my website",
    "the page about my 2 dogs should be blue",
)


@pytest.mark.parametrize("text", MULTI_PAGE)
def test_multi_page_request_fires(text: str) -> None:
    """Each multi-page phrasing is recognised."""
    assert is_multi_page_request(text)


@pytest.mark.parametrize("text", SINGLE_PAGE)
def test_single_page_request_is_silent(text: str) -> None:
    """Each single-page or page-reference control is left alone."""
    assert not is_multi_page_request(text)


def test_multi_page_recall_and_false_positives() -> None:
    """Recall is 26/26 and false positives 0/26, the figures in docs/continuation.md."""
    recall = sum(map(is_multi_page_request, MULTI_PAGE))
    false_positives = sum(map(is_multi_page_request, SINGLE_PAGE))
    assert (recall, len(MULTI_PAGE)) == (26, 26)
    assert (false_positives, len(SINGLE_PAGE)) == (0, 26)


def test_page_count_needs_web_context() -> None:
    """A bare count of pages is writing; the same count with a site noun is a site."""
    assert not is_multi_page_request("make ten pages about dog breeds")
    assert is_multi_page_request("make ten pages about dog breeds for my website")


def test_pages_of_writing_are_silent_even_with_site_noun() -> None:
    """'N pages of notes' stays a quantity of writing when a website is mentioned."""
    assert not is_multi_page_request("put my 10 pages of notes on my website")
    assert not is_multi_page_request("number the separate pages of my essay for the website")
    assert is_multi_page_request("a website with 10 pages of dog breeds")


@pytest.mark.parametrize("noun", ["site", "website", "web site", "web app", "webapp", "app"])
def test_sized_site_accepts_each_site_noun(noun: str) -> None:
    """'a ten-page <noun>' fires for every site noun the lexicon names."""
    assert is_multi_page_request(f"make a ten-page {noun}")
    assert not is_multi_page_request(f"make a one-page {noun}")


@given(st.sampled_from(MULTI_PAGE + SINGLE_PAGE))
def test_multi_page_ignores_case(text: str) -> None:
    """Upper-casing a phrasing does not change the guard's answer."""
    assert is_multi_page_request(text.upper()) == is_multi_page_request(text)


# ---------------------------------------------------------------------------------------
# continuation_tail
# ---------------------------------------------------------------------------------------


def test_tail_of_short_draft_is_whole_draft() -> None:
    """A draft within the limit is returned whole, even without a leading newline."""
    draft = "<p>short</p>\n<p>dra"
    assert continuation_tail(draft, limit=len(draft)) == draft


def test_tail_starts_at_line_start_within_limit() -> None:
    """The tail is the longest line-aligned suffix within the limit."""
    draft = "".join(f"<li>item {i:03d}</li>\n" for i in range(200)) + "<li>it"
    tail = continuation_tail(draft)
    assert len(tail) <= DEFAULT_TAIL_LIMIT
    assert draft.endswith(tail)
    assert draft[len(draft) - len(tail) - 1] == "\n"
    # One more line would break the limit.
    previous_line_start = draft.rfind("\n", 0, len(draft) - len(tail) - 1) + 1
    assert len(draft) - previous_line_start > DEFAULT_TAIL_LIMIT


def test_tail_window_starting_exactly_on_line_start() -> None:
    """When the window begins right after a newline, the tail is exactly limit chars."""
    draft = "x" * 9 + "\n" + "yyyy\nyyyyy"
    assert continuation_tail(draft, limit=10) == "yyyy\nyyyyy"


def test_tail_without_line_start_keeps_the_bound() -> None:
    """A window with no line start (minified draft) falls back to the last limit chars."""
    draft = "<p>" + "minified" * 500
    assert continuation_tail(draft, limit=100) == draft[-100:]


def test_tail_ignores_newline_at_the_very_end() -> None:
    """A newline as the last char starts no text, so it cannot empty the tail."""
    draft = "a" * 50 + "\n"
    assert continuation_tail(draft, limit=10) == draft[-10:]


def test_tail_rejects_negative_limit() -> None:
    """A negative limit is an error, not an empty tail."""
    with pytest.raises(ValueError, match="limit"):
        continuation_tail("abc", limit=-1)


def tail_reference(draft: str, limit: int) -> str:
    """Slow twin of continuation_tail: the first line start in the window, else the window."""
    if len(draft) <= limit:
        return draft
    for start in range(len(draft) - limit, len(draft)):
        if draft[start - 1] == "\n":
            return draft[start:]
    return draft[len(draft) - limit :]


@given(st.text(alphabet="ab<>\n", max_size=300), st.integers(min_value=0, max_value=120))
def test_tail_is_bounded_line_aligned_suffix(draft: str, limit: int) -> None:
    """The tail is a suffix, at most limit long, and equals the slow reference."""
    tail = continuation_tail(draft, limit=limit)
    assert draft.endswith(tail)
    assert len(tail) <= limit
    assert tail == tail_reference(draft, limit)


# ---------------------------------------------------------------------------------------
# extract_fragment
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("language", ["html", "css", "javascript", "", "HTML"])
def test_fragment_taken_from_fence_of_any_language(language: str) -> None:
    """Prose around a fence is dropped whatever the fence's info string."""
    reply = f"Sure, here it is:\n```{language}\n</p>\n</body>\n```\nLet me know!"
    assert extract_fragment(reply) == "</p>\n</body>"


def test_fragment_unfenced_reply_is_raw() -> None:
    """Without a fence the whole reply, whitespace included, is the fragment."""
    assert extract_fragment("\nshund</h2>\n") == "\nshund</h2>\n"


def test_fragment_unterminated_fence_yields_body() -> None:
    """A reply cut off before its closing fence still yields everything after the opener."""
    assert extract_fragment("```html\nshund</h2>\n<p>The Dach") == "shund</h2>\n<p>The Dach"


def test_fragment_longer_fence_survives_inner_backticks() -> None:
    """A four-backtick fence is not closed by a three-backtick line inside it."""
    reply = "````markdown\nbefore\n```\ninner\n```\nafter\n````\n"
    assert extract_fragment(reply) == "before\n```\ninner\n```\nafter"


def test_fragment_tilde_fence() -> None:
    """Tilde fences are fences too."""
    assert extract_fragment("~~~html\n</ul>\n~~~") == "</ul>"


def test_fragment_first_fence_wins() -> None:
    """With two fenced blocks, the first is the fragment."""
    assert extract_fragment("```\nfirst\n```\ntext\n```\nsecond\n```") == "first"


@given(
    st.text(alphabet="ab<>/ \n", max_size=80),
    st.text(alphabet="xyz .\n", max_size=40),
    st.sampled_from(["", "html", "css"]),
)
def test_fragment_roundtrip(body: str, prose: str, language: str) -> None:
    """Fencing a backtick-free body and wrapping it in prose gives the body back."""
    reply = f"{prose}\n```{language}\n{body}\n```\n{prose}"
    assert extract_fragment(reply) == body


@pytest.mark.parametrize(
    ("reply", "fragment"),
    [
        ("```\ncode\n```\r\n", "code"),
        ("```\r\ncode\r\n```\r\n", "code"),
        ("```\r\ncode\r\n```\r\nafter", "code"),
        ("```html\r\na\r\nb\r\n```  \r\nDone.", "a\r\nb"),
        ("```\r\ncode\r\n```\r", "code"),
        ("~~~\r\ncode\r\n~~~\r\n", "code"),
    ],
)
def test_fragment_crlf_fence_closes_like_lf(reply: str, fragment: str) -> None:
    """A closing fence line ending in "\\r" (a CRLF reply) still closes the block."""
    assert extract_fragment(reply) == fragment


@given(
    st.text(alphabet="ab<>/ \n", max_size=80),
    st.text(alphabet="xyz .\n", max_size=40),
    st.sampled_from(["", "html", "css"]),
)
def test_fragment_roundtrip_crlf(body: str, prose: str, language: str) -> None:
    """The round trip holds with every line ending written as CRLF."""
    reply = f"{prose}\n```{language}\n{body}\n```\n{prose}".replace("\n", "\r\n")
    assert extract_fragment(reply) == body.replace("\n", "\r\n")


# ---------------------------------------------------------------------------------------
# append_continuation
# ---------------------------------------------------------------------------------------


def test_crlf_reply_is_joined_without_its_prose() -> None:
    """A CRLF reply's closing fence ends the fragment, so the prose after it is not joined."""
    reply = "Sure:\r\n```html\r\nshund</h2>\r\n```\r\nHope this helps!"
    result = append_continuation("<h2>Dach", reply)
    assert result.text == "<h2>Dachshund</h2>"
    assert result.added == "shund</h2>"


def test_seam_overlap_is_removed() -> None:
    """A fragment repeating the draft's last line is joined without duplicating it."""
    draft = "<ul>\n<li>Poodle</li>\n<li>Beag"
    result = append_continuation(draft, "```html\n<li>Poodle</li>\n<li>Beagle</li>\n</ul>\n```")
    assert result.text == "<ul>\n<li>Poodle</li>\n<li>Beagle</li>\n</ul>"
    assert result.overlap == len("<li>Poodle</li>\n<li>Beag")
    assert result.added == "le</li>\n</ul>"


def test_longest_overlap_wins() -> None:
    """Of two overlaps of at least 12 chars, the longer one is removed."""
    draft = "<tr><td>cell</td><td>cell</td>"
    result = append_continuation(draft, "<td>cell</td><td>cell</td><td>more</td></tr>")
    assert result.overlap == 26
    assert result.text == draft + "<td>more</td></tr>"


@pytest.mark.parametrize(("k", "removed"), [(11, False), (12, True), (13, True)])
def test_overlap_minimum_is_twelve(k: int, removed: bool) -> None:
    """An 11-char repeat is kept as text; 12 or more is removed as a seam."""
    draft = "<p>A Beagle is a scent hound"
    rest = " bred for hunting.</p>"
    result = append_continuation(draft, draft[-k:] + rest)
    assert MIN_OVERLAP == 12
    assert result.text == (draft + rest if removed else draft + draft[-k:] + rest)
    assert result.overlap == (k if removed else 0)


def test_mid_token_join() -> None:
    """A draft cut inside a word is mended by appending directly, with no newline."""
    result = append_continuation("<h2>Dach", "```html\nshund</h2>\n```")
    assert result.text == "<h2>Dachshund</h2>"


@pytest.mark.parametrize("ending", [">", ";", "{", "}"])
def test_newline_join_after_statement_ending(ending: str) -> None:
    """With no overlap, a draft ending on > ; { or } gets a newline before the fragment."""
    draft = f"body {{ color: red{ending}"
    assert append_continuation(draft, "p { margin: 0 }").text == draft + "\np { margin: 0 }"


@pytest.mark.parametrize("ending", ["a", ")", ",", " ", "\n", '"'])
def test_no_newline_join_after_other_endings(ending: str) -> None:
    """Any other final character is joined directly."""
    draft = f"<p>text{ending}"
    assert append_continuation(draft, "more</p>").text == draft + "more</p>"


def test_no_newline_join_when_overlap_found() -> None:
    """A draft ending on '>' with an overlap is joined at the overlap, without a newline."""
    draft = "<main>\n<h2>Poodle</h2>"
    result = append_continuation(draft, "<h2>Poodle</h2>\n<p>Curly.</p>")
    assert result.text == "<main>\n<h2>Poodle</h2>\n<p>Curly.</p>"


@pytest.mark.parametrize(
    "reply",
    [
        "```html\n<!DOCTYPE html>\n<html>\n<body>new</body>\n</html>\n```",
        "  \n<HTML lang='en'>\n<body>new</body></HTML>",
        "<!doctype html><p>again</p>",
    ],
)
def test_restart_is_rejected_and_draft_unchanged(reply: str) -> None:
    """A fragment that starts the file over leaves the draft exactly as it was."""
    draft = dog_draft(3000)
    result = append_continuation(draft, reply)
    assert result.rejected == "restart"
    assert result.text == draft
    assert result.added == ""
    assert not result.complete


def test_echo_of_short_whole_draft_is_not_a_restart() -> None:
    """A model that echoes a short draft from its doctype and continues is accepted."""
    draft = "<!DOCTYPE html>\n<html>\n<body>\n<p>Hi"
    result = append_continuation(draft, draft + " there</p>\n</body>\n</html>")
    assert result.rejected is None
    assert result.text == draft + " there</p>\n</body>\n</html>"


@pytest.mark.parametrize("reply", ["", "   \n\t", "```html\n```", "```html\n\n\n```"])
def test_empty_addition_is_rejected(reply: str) -> None:
    """An empty or whitespace-only fragment leaves the draft unchanged."""
    draft = "<ul>\n<li>Beag"
    result = append_continuation(draft, reply)
    assert (result.rejected, result.text, result.added) == ("empty", draft, "")


def test_pure_echo_is_an_empty_addition() -> None:
    """A fragment that only repeats the draft's end adds nothing and is rejected."""
    draft = "<ul>\n<li>Poodle</li>\n<li>Beag"
    result = append_continuation(draft, "<li>Poodle</li>\n<li>Beag")
    assert (result.rejected, result.text) == ("empty", draft)


def test_trailing_text_after_html_close_is_dropped() -> None:
    """Everything after </html> in the fragment is cut, and the draft is complete."""
    result = append_continuation("<body>\n<p>hi", "</p>\n</body>\n</html>\n<p>stray</p>\nThanks!")
    assert result.text == "<body>\n<p>hi</p>\n</body>\n</html>"
    assert result.complete


@pytest.mark.parametrize("prefixes", ["<html", b"<html"])
def test_restart_prefixes_as_a_bare_string_is_a_type_error(prefixes: object) -> None:
    """A bare string would be read one character per prefix, so "<p>" would be a restart."""
    with pytest.raises(TypeError, match="restart_prefixes"):
        append_continuation("<p>x", "hello</p>", restart_prefixes=prefixes)  # type: ignore[arg-type]


def test_restart_prefixes_must_be_non_empty_strings() -> None:
    """An empty prefix would make every fragment a restart; a non-string one cannot match."""
    with pytest.raises(ValueError, match="restart_prefixes"):
        append_continuation("<p>x", "hello</p>", restart_prefixes=("<html", ""))
    with pytest.raises(TypeError, match="restart_prefixes"):
        append_continuation("<p>x", "hello</p>", restart_prefixes=(1,))  # type: ignore[arg-type]


def test_completion_marker_split_across_seam() -> None:
    """A draft ending in '</ht' completed by 'ml>' counts as complete."""
    result = append_continuation("<body></body>\n</ht", "ml>\n<!-- extra -->")
    assert result.text == "<body></body>\n</html>"
    assert result.complete


def test_incomplete_without_marker() -> None:
    """Without </html> the draft is not complete."""
    assert not append_continuation("<body>\n<p>hi", "</p>\n<p>more").complete


def test_completion_marker_is_case_insensitive() -> None:
    """'</HTML>' completes a draft just as '</html>' does."""
    result = append_continuation("<BODY>x", "</BODY></HTML> trailing")
    assert result.text == "<BODY>x</BODY></HTML>"
    assert result.complete


def test_completion_marker_option_generalises() -> None:
    """Another marker can define completion, e.g. an SVG document's closing tag."""
    result = append_continuation(
        "<svg>\n<circle r='1'", "/>\n</svg>\ntext", completion_marker="</svg>"
    )
    assert result.text == "<svg>\n<circle r='1'/>\n</svg>"
    assert result.complete


def test_restart_prefixes_option_generalises() -> None:
    """Another language's restart opening can be rejected, e.g. a Python shebang."""
    result = append_continuation(
        "def f():\n    return", "#!/usr/bin/env python\ndef f(): ...", restart_prefixes=("#!",)
    )
    assert result.rejected == "restart"


@given(
    st.text(alphabet="abc<>/ \n", min_size=12, max_size=200),
    st.integers(min_value=12, max_value=200),
    st.text(alphabet="xyz<>/ \n", min_size=1, max_size=60),
)
def test_repeated_end_is_never_duplicated(draft: str, k: int, new: str) -> None:
    """A reply repeating the draft's last k >= 12 chars adds at most the new text."""
    k = min(k, len(draft))
    result = append_continuation(draft, draft[-k:] + new, restart_prefixes=())
    assert result.text.startswith(draft)
    assert result.overlap >= k
    assert len(result.added) <= len(new)
    assert result.added == result.text[len(draft) :]
    if result.rejected is None and "</html>" not in new:
        assert draft + result.added == draft + (draft[-k:] + new)[result.overlap :]


@given(st.text(alphabet="ab", max_size=60), st.text(alphabet="ab", max_size=60))
def test_fast_overlap_equals_reference(draft: str, fragment: str) -> None:
    """The KMP overlap equals the brute-force overlap on small alphabets."""
    assert _longest_overlap(draft, fragment) == _longest_overlap_reference(draft, fragment)


def test_overlap_is_linear_on_pathological_input() -> None:
    """A 200k-char periodic seam, quadratic for the reference, is joined at once."""
    result = append_continuation("a" * 200_000, "a" * 200_000 + "b")
    assert (result.overlap, result.added) == (200_000, "b")


# ---------------------------------------------------------------------------------------
# Prompts
# ---------------------------------------------------------------------------------------


def test_continuation_messages_shape() -> None:
    """A system message then a user message holding the request and the tail verbatim."""
    messages = build_continuation_messages("a dog site", "  <h2>Dach")
    assert [m["type"] for m in messages] == ["system", "user"]
    assert "a dog site" in messages[1]["text"]
    assert "\n  <h2>Dach\n" in messages[1]["text"]
    assert set(messages[0]) == set(messages[1]) == {"type", "text"}


def test_request_is_clipped_to_600_chars() -> None:
    """A long request appears as at most its first 600 characters."""
    request = "r" * 5000
    text = build_continuation_messages(request, "tail")[1]["text"]
    assert "r" * (MAX_REQUEST_CHARS - 1) in text
    assert "r" * MAX_REQUEST_CHARS not in text


def test_continuation_prompt_is_bounded() -> None:
    """However long the draft and request, the tail prompt stays under a fixed size."""
    sizes = []
    for n_chars in (2_000, 20_000, 200_000):
        draft = dog_draft(n_chars)
        messages = build_continuation_messages("x" * n_chars, continuation_tail(draft))
        sizes.append(sum(len(m["text"]) for m in messages))
    assert max(sizes) <= 600 + DEFAULT_TAIL_LIMIT + 700
    # Only the tail's line alignment varies; a prompt carrying the draft would grow 100x.
    assert max(sizes) - min(sizes) < DEFAULT_TAIL_LIMIT


def test_fence_in_tail_gets_a_longer_fence() -> None:
    """A tail containing ``` is wrapped in a longer fence so it cannot close early."""
    text = build_continuation_messages("req", "x = '```'")[1]["text"]
    assert "````\nx = '```'\n````" in text


def test_rewrite_messages_hold_whole_draft() -> None:
    """The rewrite prompt carries the entire draft, head included."""
    draft = dog_draft(3000)
    messages = build_rewrite_messages(NOTE_REQUEST, draft)
    assert [m["type"] for m in messages] == ["system", "user"]
    assert draft in messages[1]["text"]


# ---------------------------------------------------------------------------------------
# plan_continuation
# ---------------------------------------------------------------------------------------


def test_plan_rewrite_when_it_fits() -> None:
    """A small draft in a roomy window is rewritten whole."""
    plan = plan_continuation(
        dog_draft(2000), NOTE_REQUEST, context_tokens=CONTEXT_TOKENS, estimate=estimate
    )
    assert plan.mode == "rewrite"
    assert plan.tail is None
    assert (
        plan.reply_room >= plan.needed == estimate({"type": "user", "text": dog_draft(2000)}) + 128
    )
    assert dog_draft(2000) in plan.messages[1]["text"]


def test_plan_refuses_with_numbers() -> None:
    """In a window too small for either mode the plan refuses and states the numbers."""
    plan = plan_continuation(dog_draft(6000), NOTE_REQUEST, context_tokens=700, estimate=estimate)
    assert plan.mode == "refuse"
    assert plan.messages == ()
    assert plan.tail is not None
    for number in (plan.rewrite.prompt_tokens, plan.rewrite.needed, plan.tail.prompt_tokens):
        assert f"{number:,}" in plan.explanation
    assert "256" in plan.explanation


def test_plan_tail_floor_is_256_tokens() -> None:
    """Tail mode needs 256 tokens of reply room by default: 255 refuses, 256 proceeds."""
    draft = dog_draft(10_600)
    messages = build_continuation_messages(NOTE_REQUEST, continuation_tail(draft))
    tail_prompt = sum(map(estimate, messages))
    below = plan_continuation(
        draft, NOTE_REQUEST, context_tokens=tail_prompt + 255, estimate=estimate
    )
    at = plan_continuation(draft, NOTE_REQUEST, context_tokens=tail_prompt + 256, estimate=estimate)
    assert (below.mode, at.mode) == ("refuse", "tail")
    assert at.prompt_tokens == tail_prompt
    literal = plan_continuation(
        draft, NOTE_REQUEST, context_tokens=tail_prompt + 128, estimate=estimate, min_tail_room=0
    )
    assert (literal.mode, literal.needed) == ("tail", 128)


def test_plan_complete_draft_is_not_continued() -> None:
    """A finished draft too big to rewrite is refused, not tail-continued."""
    draft = dog_draft(12_000) + "shund</h2></section></main></body></html>"
    plan = plan_continuation(
        draft, "make the header blue", context_tokens=CONTEXT_TOKENS, estimate=estimate
    )
    assert plan.mode == "refuse"
    assert plan.tail is None
    assert "</html>" in plan.explanation


def test_plan_accepts_float_estimates() -> None:
    """A fractional estimator is summed and rounded up once."""
    plan = plan_continuation("abc", "req", context_tokens=1000, estimate=lambda m: 0.4)
    assert plan.rewrite.prompt_tokens == 1
    assert plan.mode == "rewrite"


@pytest.mark.parametrize("answer", [math.nan, math.inf, -math.inf, None, -1000, -0.5, "12",
                                    True])
@pytest.mark.parametrize("draft", ["<p>" * 3000, "<p>short"])
def test_plan_counts_unusable_estimates_as_zero(answer: object, draft: str) -> None:
    """An estimate that is not a finite number >= 0 counts as 0, as build_thread counts it:
    for every message it is given, the plan is the one an estimator answering 0 there gets."""
    def bad_for_system(message: Message) -> object:
        return answer if message["type"] == "system" else estimate(message)

    def zero_for_system(message: Message) -> float:
        return 0 if message["type"] == "system" else estimate(message)

    for bad, zero in [(bad_for_system, zero_for_system), (lambda m: answer, lambda m: 0)]:
        plan = plan_continuation(draft, "a page", context_tokens=CONTEXT_TOKENS,
                                 estimate=bad)  # type: ignore[arg-type]
        assert plan == plan_continuation(draft, "a page", context_tokens=CONTEXT_TOKENS,
                                         estimate=zero)
        assert plan.prompt_tokens >= 0 and plan.reply_room <= CONTEXT_TOKENS


def test_plan_reads_the_estimator_as_its_history_fit_does() -> None:
    """One call counts a NaN estimate as 0 for its own prompts and for the history alike."""
    history = [{"type": "user", "text": "a dog site"}, {"type": "bot", "text": "<p>..."}]
    plan = plan_continuation("<p>short", "a page", context_tokens=CONTEXT_TOKENS,
                             estimate=lambda m: math.nan, history=history)
    assert (plan.mode, plan.prompt_tokens, plan.reply_room) == ("rewrite", 0, CONTEXT_TOKENS)
    assert len(plan.messages) == 4


def test_plan_sum_past_the_largest_double_is_exact() -> None:
    """Two finite estimates whose sum overflows a double still give an int prompt size."""
    plan = plan_continuation("<p>x", "a page", context_tokens=CONTEXT_TOKENS,
                             estimate=lambda m: 1.5e308)
    assert plan.mode == "refuse"
    assert plan.rewrite.prompt_tokens == 2 * int(1.5e308)


def test_plan_estimate_returning_no_json_value_is_a_type_error() -> None:
    """An estimator answering an object no JSON estimator returns is named, as in build_thread."""
    with pytest.raises(TypeError, match=r"estimate\(messages\[0\]\) returned complex.*rewrite"):
        plan_continuation("<p>x", "a page", context_tokens=CONTEXT_TOKENS,
                          estimate=lambda m: 1j)  # type: ignore[arg-type,return-value]


@pytest.mark.parametrize(("context_tokens", "reply_reserve"), [(0, 128), (-5, 128), (4096, -1)])
def test_plan_rejects_invalid_budgets(context_tokens: int, reply_reserve: int) -> None:
    """Non-positive windows and negative reserves are errors."""
    with pytest.raises(ValueError):
        plan_continuation(
            "d", "r", context_tokens=context_tokens, estimate=estimate, reply_reserve=reply_reserve
        )


@pytest.mark.parametrize("window", [math.nan, math.inf, -math.inf, None, 0.5])
def test_plan_window_must_be_a_finite_number_of_at_least_one_token(window: object) -> None:
    """context_tokens has no default, so a non-finite one is an error naming it, not "unset"
    (NaN used to fail every comparison and give a refusal with reply room NaN)."""
    with pytest.raises(ValueError, match="context_tokens"):
        plan_continuation("d", "r", context_tokens=window, estimate=estimate)  # type: ignore[arg-type]


@pytest.mark.parametrize("option", ["context_tokens", "reply_reserve", "min_tail_room",
                                    "tail_limit"])
def test_plan_option_that_is_no_number_is_a_type_error(option: str) -> None:
    """A string or a boolean is not a count; the error names the option."""
    for value in ["4096", True]:
        options: dict[str, Any] = {"context_tokens": CONTEXT_TOKENS, option: value}
        with pytest.raises(TypeError, match=option):
            plan_continuation("<p>" * 3000, "r", estimate=estimate, **options)


@pytest.mark.parametrize("option", ["reply_reserve", "min_tail_room", "tail_limit"])
def test_plan_negative_option_is_a_value_error_naming_it(option: str) -> None:
    options: dict[str, Any] = {option: -1}
    with pytest.raises(ValueError, match=option):
        plan_continuation("<p>" * 3000, "r", context_tokens=CONTEXT_TOKENS, estimate=estimate,
                          **options)


@pytest.mark.parametrize("option", ["reply_reserve", "min_tail_room", "tail_limit"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, None])
@pytest.mark.parametrize("draft", ["<p>" * 3000, "<p>short", dog_draft(10_600)])
def test_plan_non_finite_option_means_the_default(option: str, value: object,
                                                   draft: str) -> None:
    """As for every vthread option (SPEC section 4), a value that is not finite is unset: a
    NaN reply_reserve used to turn a fitting rewrite into tail mode, a NaN min_tail_room
    refuse, a NaN tail_limit fail as a string index."""
    options: dict[str, Any] = {option: value}
    plan = plan_continuation(draft, "r", context_tokens=CONTEXT_TOKENS, estimate=estimate,
                             **options)
    assert plan == plan_continuation(draft, "r", context_tokens=CONTEXT_TOKENS,
                                     estimate=estimate)


@pytest.mark.parametrize(("option", "value", "whole"),
                         [("context_tokens", 4096.5, 4096), ("reply_reserve", 128.9, 128),
                          ("min_tail_room", 256.7, 256), ("tail_limit", 1.5, 1),
                          ("tail_limit", 1200.99, 1200)])
def test_plan_fractional_options_round_down(option: str, value: float, whole: int) -> None:
    draft = dog_draft(10_600)
    base: dict[str, Any] = {"context_tokens": CONTEXT_TOKENS}
    fractional = plan_continuation(draft, "r", estimate=estimate, **{**base, option: value})
    assert fractional == plan_continuation(draft, "r", estimate=estimate,
                                           **{**base, option: whole})


@given(st.floats(min_value=1, max_value=6000), st.floats(min_value=0, max_value=3000),
       st.integers(min_value=0, max_value=12_000))
def test_plan_with_history_never_leaves_less_room_than_needed(
        window: float, history_tokens: float, n_chars: int) -> None:
    """With a fractional window, a history costing the whole fractional spare room used to
    be kept and rounded up past it: tail.fits held while reply_room (255.5) < needed (256)."""
    draft = "<p>dog</p>\n" * (n_chars // 11)
    history = [{"type": "user", "text": "x", "usage": {"tokens": history_tokens}}]
    plan = plan_continuation(draft, "r", context_tokens=window, estimate=estimate,
                             history=history)
    if plan.mode != "refuse":
        assert plan.reply_room >= plan.needed
        assert plan.prompt_tokens + plan.reply_room == math.floor(window)


def test_plan_fractional_window_example() -> None:
    """The tester's case: the history exactly fills the fractional spare room."""
    draft = dog_draft(10_600)
    bare = plan_continuation(draft, "r", context_tokens=CONTEXT_TOKENS, estimate=estimate)
    spare = bare.reply_room - bare.needed
    history = [{"type": "user", "text": "x", "usage": {"tokens": spare + 0.5}}]
    plan = plan_continuation(draft, "r", context_tokens=CONTEXT_TOKENS + 0.5, estimate=estimate,
                             history=history)
    assert plan.mode == "tail"
    assert plan.reply_room >= plan.needed


@pytest.mark.parametrize("marker", ["", None])
def test_empty_completion_marker_is_rejected(marker: object) -> None:
    """An empty marker is in every text: every draft would be complete, every join cut."""
    error = ValueError if marker == "" else TypeError
    with pytest.raises(error, match="completion_marker"):
        plan_continuation("<p>" * 3000, "r", context_tokens=CONTEXT_TOKENS, estimate=estimate,
                          completion_marker=marker)  # type: ignore[arg-type]
    with pytest.raises(error, match="completion_marker"):
        append_continuation("<p>x", "y</p>", completion_marker=marker)  # type: ignore[arg-type]


@pytest.mark.parametrize("limit", [1.5, math.nan, "12", True])
def test_tail_limit_must_be_an_int(limit: object) -> None:
    with pytest.raises(TypeError, match="limit"):
        continuation_tail("<p>\n" * 100, limit)  # type: ignore[arg-type]


@pytest.mark.parametrize(("draft", "mode", "calls"),
                         [("<p>short", "rewrite", 3), (dog_draft(10_600), "tail", 5),
                          (dog_draft(12_000) + "</html>", "refuse", 3)])
def test_plan_estimate_call_count(draft: str, mode: str, calls: int) -> None:
    """The count docs/continuation.md states: the rewrite prompt's two messages and the
    draft, and the tail prompt's two when tail mode is considered."""
    seen: list[Message] = []

    def counting(message: Message) -> int:
        seen.append(message)
        return estimate(message)

    assert plan_continuation(draft, "r", context_tokens=CONTEXT_TOKENS,
                             estimate=counting).mode == mode
    assert len(seen) == calls
    seen.clear()
    assert plan_continuation(draft, "r", context_tokens=200, estimate=counting).mode == "refuse"
    assert len(seen) == (3 if "</html>" in draft else 5)


@given(st.integers(min_value=0, max_value=30_000), st.integers(min_value=200, max_value=16_384))
def test_plan_arithmetic(n_chars: int, context_tokens: int) -> None:
    """Prompt plus room is the window, and the tail prompt never grows past its bound."""
    draft = "<p>x</p>\n" * (n_chars // 9)
    plan = plan_continuation(draft, NOTE_REQUEST, context_tokens=context_tokens, estimate=estimate)
    assert plan.prompt_tokens + plan.reply_room == context_tokens
    assert plan.rewrite.prompt_tokens + plan.rewrite.reply_room == context_tokens
    if plan.tail is not None:
        assert plan.tail.prompt_tokens <= (600 + DEFAULT_TAIL_LIMIT + 700) // 4 + 2 * 5
    assert (plan.mode == "rewrite") == plan.rewrite.fits


# ---------------------------------------------------------------------------------------
# The motivating case's numbers, and the 10.6k end-to-end run
# ---------------------------------------------------------------------------------------


def test_note_draft_measurements() -> None:
    """The 5,532-char draft's prompt sizes match the table in docs/continuation.md."""
    draft = dog_draft(5532)
    plain = plan_continuation(draft, NOTE_REQUEST, context_tokens=CONTEXT_TOKENS, estimate=estimate)
    calibrated = plan_continuation(
        draft, NOTE_REQUEST, context_tokens=CONTEXT_TOKENS, estimate=estimate_calibrated
    )
    tail = continuation_tail(draft)
    tail_messages = build_continuation_messages(NOTE_REQUEST, tail)
    assert plain.mode == "rewrite"
    assert (plain.rewrite.prompt_tokens, plain.rewrite.reply_room, plain.rewrite.needed) == (
        1504,
        2592,
        1515,
    )
    assert sum(map(estimate, tail_messages)) == 463
    assert calibrated.mode == "tail"
    assert (
        calibrated.rewrite.prompt_tokens,
        calibrated.rewrite.reply_room,
        calibrated.rewrite.needed,
    ) == (2667, 1429, 2591)
    assert calibrated.tail is not None
    assert (calibrated.tail.prompt_tokens, calibrated.tail.reply_room) == (817, 3279)
    assert (len(tail), sum(len(m["text"]) for m in tail_messages)) == (1147, 1817)


def test_end_to_end_tail_continuation_of_10_6k_draft() -> None:
    """A 10.6k-char draft that cannot be rewritten in 4,096 tokens is finished in one call."""
    draft = dog_draft(10_600)
    plan = plan_continuation(draft, NOTE_REQUEST, context_tokens=CONTEXT_TOKENS, estimate=estimate)
    assert not plan.rewrite.fits
    assert plan.mode == "tail"

    calls: list[list[Message]] = []

    def model(messages: list[Message]) -> str:
        calls.append(messages)
        return mock_model(messages)

    result = append_continuation(draft, model(list(plan.messages)))
    prompt = "\n".join(m["text"] for m in calls[0])
    assert len(calls) == 1
    assert draft[:2000] not in prompt
    assert "<!DOCTYPE html>" not in prompt
    assert "<style>" not in prompt
    assert result.text.startswith(draft)
    assert result.text.endswith("</html>")
    assert result.complete
    assert result.rejected is None
    assert "<h2>Dachshund</h2>" in result.text
    assert result.text.count('id="dachshund"') == 1
    assert (plan.prompt_tokens, plan.reply_room, plan.rewrite.prompt_tokens) == (465, 3631, 2771)


@pytest.mark.parametrize("prefixes", [(p for p in ("<html",)), iter(["<html"]), {"<html"},
                                      {"<html": 1}.keys()])
def test_restart_prefixes_that_are_no_sequence_are_a_type_error(prefixes: object) -> None:
    """A generator was consumed by the option's check: no prefix was left, so a restart
    was joined on silently. An iterable that is no sequence is refused, as ``history``
    refuses one."""
    with pytest.raises(TypeError, match="restart_prefixes must be a sequence"):
        append_continuation("<p>x", "<html><p>again", restart_prefixes=prefixes)  # type: ignore[arg-type]


def test_restart_prefixes_as_a_list_detect_restarts() -> None:
    """Any sequence works, and is read as often as needed."""
    result = append_continuation("<p>x", "<HTML><p>again", restart_prefixes=["<!doctype", "<html"])
    assert result.rejected == "restart"


@pytest.mark.parametrize("history", [(m for m in [{"type": "user", "text": "hi"}]), "hi",
                                     {"type": "user", "text": "hi"}])
def test_history_that_is_no_sequence_of_messages_is_a_type_error(history: object) -> None:
    """A generator, a string or one message is named as ``history`` (a generator was named
    as build_thread's "messages"; a refused plan ignored it)."""
    for draft in ("<p>short", dog_draft(12_000) + "</html>"):
        with pytest.raises(TypeError, match="history must be a sequence"):
            plan_continuation(draft, "r", context_tokens=CONTEXT_TOKENS, estimate=estimate,
                              history=history)  # type: ignore[arg-type]


def test_a_history_message_that_is_no_mapping_is_named_in_the_history() -> None:
    """A history holding something that is no message is named as ``history[i]``, the
    argument the caller gave (it was build_thread's "messages[1]"), refused plan or not."""
    history: list[Any] = [{"type": "user", "text": "hi"}, 5]
    for draft in ("<p>short", dog_draft(12_000) + "</html>"):
        with pytest.raises(TypeError, match=r"^history\[1\] must be a mapping, got int$"):
            plan_continuation(draft, "r", context_tokens=CONTEXT_TOKENS, estimate=estimate,
                              history=history)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, None])
def test_min_overlap_not_finite_means_the_default(value: object) -> None:
    """NaN was taken as 0 (every overlap of 1 character removed); None was a TypeError
    naming nothing ("'<' not supported")."""
    draft, reply = "<p>A dachshund is", "s a long dog</p>"
    result = append_continuation(draft, reply, min_overlap=value)  # type: ignore[arg-type]
    assert result == append_continuation(draft, reply)
    assert result.overlap == 0 and result.text == draft + reply


@pytest.mark.parametrize(("value", "error"), [("3", TypeError), (b"3", TypeError),
                                              ([3], TypeError), (-1, ValueError)])
def test_min_overlap_that_is_no_count_names_the_option(value: object,
                                                       error: type[Exception]) -> None:
    with pytest.raises(error, match="min_overlap"):
        append_continuation("<p>x", "x</p>", min_overlap=value)  # type: ignore[arg-type]


def test_min_overlap_fraction_rounds_down() -> None:
    draft, reply = "<p>A dachshund is", "is a long dog</p>"
    assert append_continuation(draft, reply, min_overlap=2.9).overlap == 2
    assert append_continuation(draft, reply, min_overlap=3.5).overlap == 0


@pytest.mark.parametrize("value", [None, b"<p>", 3, ["<p>"]])
def test_text_arguments_that_are_no_string_are_named(value: object) -> None:
    """Each text argument that is not a ``str`` is a ``TypeError`` naming it and what it got
    (None gave an AttributeError from inside: "'NoneType' object has no attribute ...")."""
    got = "None" if value is None else type(value).__name__
    calls: list[tuple[str, Any]] = [
        ("draft", lambda: continuation_tail(value)),
        ("reply", lambda: extract_fragment(value)),
        ("text", lambda: is_multi_page_request(value)),
        ("draft", lambda: append_continuation(value, "x</p>")),
        ("reply", lambda: append_continuation("<p>x", value)),
        ("request", lambda: build_continuation_messages(value, "<p>")),
        ("tail", lambda: build_continuation_messages("r", value)),
        ("draft", lambda: build_rewrite_messages("r", value)),
        ("draft", lambda: plan_continuation(value, "r", context_tokens=CONTEXT_TOKENS,
                                            estimate=estimate)),
        ("request", lambda: plan_continuation("<p>x", value, context_tokens=CONTEXT_TOKENS,
                                              estimate=estimate)),
    ]
    for name, call in calls:
        with pytest.raises(TypeError, match=re.escape(f"{name} must be a str, got {got}")):
            call()


@pytest.mark.parametrize("value", [None, 3, "len"])
def test_estimate_that_is_no_function_is_named(value: object) -> None:
    got = "None" if value is None else type(value).__name__
    with pytest.raises(TypeError, match=f"estimate must be a function of one message, got {got}"):
        plan_continuation("<p>x", "r", context_tokens=CONTEXT_TOKENS,
                          estimate=value)  # type: ignore[arg-type]
