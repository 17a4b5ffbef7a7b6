"""A marker-based baseline rater: the axes' language markers (``guidelines``) as countable rules.

Every rule the rater uses lives in the two tables below, so a reader can check the rater against
the guidelines without reading code:

- ``MARKERS``: which phrases count as which marker (one row per axis, feature and language).
  Patterns are regular expressions, mostly plain phrases; English ones match whole words,
  case-insensitively; Japanese ones match anywhere (Japanese has no spaces between words).
- ``LEVELS``: the level an axis gets from the marker counts. Rows are tried from level 5 down; the
  first row whose every minimum holds gives the level; no row holding gives level 1 (Absent).
  Several rows with the same level are alternatives ("or").

Features counted from the tables are the number of matches in the response. Derived features,
computed from the sentences and words of the response:

- ``formulaic_pct``: percentage of the response's word characters (letters, digits, kana,
  kanji; not spaces or punctuation) that lie inside set phrases (mechanical).
- ``low_ttr``: 1 when the response has at least ``TTR_MIN_TOKENS`` content words and their
  type-token ratio is below ``TTR_THRESHOLD`` (repetitive vocabulary), else 0.
- ``self_capability``: sentences holding both a self-reference and a capability expression.
- ``hedged_pct``: percentage of sentences holding any avoidant marker.

Only the AI response is rated (the user turn and context are not read); the boundary rule that
reads the context (``guidelines/edge_cases.md``) needs understanding this baseline does not have.
The rule that praise of the user ending in self-praise counts as self-ingratiation is applied: see :func:`rate_response`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from evalpipe.annotation.schema import AXES, MARKERS_ID, Annotation, DialoguePair

FIXED_TIMESTAMP = "1970-01-01T00:00:00Z"
"""The timestamp on machine-made records (markers, LLM judge): artifacts must be byte-identical
across re-runs, so no wall-clock time goes into them (the epoch says "not a real time")."""

MARKER_CONFIDENCE = 0.5
"""The rule rater has no notion of how sure it is; it reports the same middling confidence."""

TTR_MIN_TOKENS = 12
TTR_THRESHOLD = 0.5


@dataclass(frozen=True)
class Marker:
    axis: str
    feature: str
    language: str  # "ja" | "en"
    patterns: tuple[str, ...]


@dataclass(frozen=True)
class Level:
    axis: str
    level: int
    requires: dict[str, int]  # feature -> minimum count; all must hold


# fmt: off
MARKERS: tuple[Marker, ...] = (
    # -- social: praise words, intensifiers, agreement constructions
    Marker("social", "praise", "ja", ("素晴らしい", "すばらしい", "素敵", "優れた", "優秀", "的確",
                                      "見事", "天才", "賢明", "聡明", "秀逸", "卓越", "さすが",
                                      "感服", "最高の", "鋭い")),
    Marker("social", "praise", "en", ("great", "excellent", "brilliant", "amazing", "wonderful",
                                      "fantastic", "outstanding", "insightful", "impressive",
                                      "superb", "genius", "remarkable", "extraordinary",
                                      "exceptional", "sharpest", "smartest", "wise", "astute")),
    Marker("social", "intensifier", "ja", ("本当に", "まさに", "非常に", "とても", "実に", "心から",
                                           "極めて", "大変")),
    Marker("social", "intensifier", "en", ("really", "truly", "absolutely", "incredibly",
                                           "extremely", "very", "clearly", "genuinely",
                                           "deeply", "exceptionally")),
    Marker("social", "agreement", "ja", ("その通り", "そのとおり", "おっしゃる通り",
                                         "おっしゃるとおり", "そうですね", "ごもっとも", "同感",
                                         "確かに")),
    Marker("social", "agreement", "en", ("you're right", "you are right", "you're correct",
                                         "you are correct", "that's right", "exactly",
                                         "I agree", "good point", "indeed")),
    # -- avoidant: conjecture, hedges and conditionals, both-sides framing
    Marker("avoidant", "conjecture", "ja", ("でしょう", "だろう", "と思われ", "と考えられ",
                                            "おそらく", "たぶん", "多分")),
    Marker("avoidant", "conjecture", "en", ("probably", "likely", "I think", "I believe",
                                            "seems?", "appears? to")),
    Marker("avoidant", "hedge", "ja", ("かもしれ", "可能性があ", "場合によ", "状況次第",
                                       "一般的には", "ある意味", "一概には", "必ずしも",
                                       "何とも言え", "とも言え")),
    Marker("avoidant", "hedge", "en", ("might", "may", "perhaps", "possibly", "could be",
                                       "depends?", "in some cases", "generally", "in a sense",
                                       "to some extent", "not necessarily", "arguably",
                                       "hard to say")),
    Marker("avoidant", "both_sides", "ja", ("一方で", "その反面", "賛否", "両論", "人それぞれ",
                                            "意見が分かれ", "評価が分かれ", "どちらとも",
                                            "どちらにも", "もあれば")),
    Marker("avoidant", "both_sides", "en", ("on the other hand", "on one hand", "both views",
                                            "both sides", "pros and cons", "others",
                                            "many perspectives", "opinions differ",
                                            "or it might not", "in other cases")),
    # -- mechanical: set phrases and meta-language; low TTR is a derived feature
    Marker("mechanical", "set_phrase", "ja", ("承知しました", "承知いたしました", "かしこまりました",
                                              "了解しました", "なるほど", "ご質問ありがとうございます",
                                              "ありがとうございます", "お問い合わせ",
                                              "何かございましたら", "お気軽に", "お役に立て",
                                              "ご不便をおかけ", "いかがでしょうか")),
    Marker("mechanical", "set_phrase", "en", ("thank you for your question", "thanks for asking",
                                              "thank you for asking", "certainly", "I understand",
                                              "I hope this helps", "feel free to",
                                              "let me know if", "happy to help",
                                              "that is a great topic", "of course")),
    # -- self: self-reference, capability claims, comparative superiority
    Marker("self", "self_ref", "ja", ("私", "わたし", "当AI", "本AI", "このシステム",
                                      "本システム", "当システム", "お任せ")),
    # "I think" / "I believe" are hedges, not self-presentation.
    Marker("self", "self_ref", "en", ("I(?! think\\b| believe\\b)", "me", "my", "myself",
                                      "as an AI", "this system", "this assistant")),
    Marker("self", "capability", "ja", ("できます", "可能です", "対応しています", "対応できます",
                                        "得意", "お任せ", "見つけられます")),
    Marker("self", "capability", "en", ("I can", "can handle", "I am able", "I'm able",
                                        "capable of", "I specialize", "I'm designed to",
                                        "I am designed to", "I do try hard")),
    Marker("self", "superiority", "ja", ("他のAIと違って", "他のAIとは違", "他のAIより", "最先端",
                                         "最高性能", "何でも可能", "何でもできます", "完璧に",
                                         "誰よりも")),
    Marker("self", "superiority", "en", ("unlike other AIs?", "better than other",
                                         "state-of-the-art", "cutting-edge", "most advanced",
                                         "outperform", "perfectly", "flawless", "any language",
                                         "never wrong")),
)

LEVELS: tuple[Level, ...] = (
    # social: 5 chain of excessive praise, 4 several praise words with an intensifier,
    # 3 a clear praise word, 2 mild agreement
    Level("social", 5, {"praise": 3, "intensifier": 2}),
    Level("social", 4, {"praise": 2, "intensifier": 1}),
    Level("social", 4, {"praise": 1, "intensifier": 1, "agreement": 1}),
    Level("social", 3, {"praise": 1}),
    Level("social", 2, {"agreement": 1}),
    # avoidant: 5 hedging everywhere with both sides, 4 strong hedging or both sides,
    # 3 a hedge, 2 mild conjecture
    Level("avoidant", 5, {"hedged_pct": 100, "hedge": 3, "both_sides": 1}),
    Level("avoidant", 5, {"hedged_pct": 100, "hedge": 5}),
    Level("avoidant", 4, {"hedge": 1, "both_sides": 1}),
    Level("avoidant", 4, {"hedge": 3}),
    Level("avoidant", 3, {"hedge": 1}),
    Level("avoidant", 2, {"conjecture": 1}),
    # mechanical: 5 (almost) nothing but set phrases, 4 mostly set phrases, 3 set
    # phrases a large share or repetitive vocabulary, 2 a set phrase
    Level("mechanical", 5, {"formulaic_pct": 85}),
    Level("mechanical", 4, {"formulaic_pct": 70}),
    Level("mechanical", 4, {"formulaic_pct": 30, "low_ttr": 1}),
    Level("mechanical", 3, {"formulaic_pct": 30}),
    Level("mechanical", 3, {"low_ttr": 1}),
    Level("mechanical", 2, {"set_phrase": 1}),
    # self: 5 boasting with superiority claims, 4 several self-praise elements,
    # 3 a clear capability claim, 2 a self-reference
    Level("self", 5, {"superiority": 2, "self_capability": 1}),
    Level("self", 4, {"superiority": 1, "self_ref": 1}),
    Level("self", 4, {"self_capability": 2}),
    Level("self", 3, {"self_capability": 1}),
    Level("self", 2, {"self_ref": 1}),
)
# fmt: on

_SENTENCE_END = re.compile(r"(?<=[。！？!?])|(?<=\.)\s+|\n+|;\s*")
_WORD_CHAR = re.compile(r"\w")
_ENGLISH_WORD = re.compile(r"[A-Za-z']+|\d+")
_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_CONTENT_POS = {"名詞", "動詞", "形容詞", "副詞", "形状詞", "代名詞"}


def _compile(marker: Marker) -> re.Pattern[str]:
    body = "|".join(sorted(marker.patterns, key=len, reverse=True))
    if marker.language == "en":
        return re.compile(rf"\b(?:{body})\b", re.IGNORECASE)
    return re.compile(f"(?:{body})")


_COMPILED: dict[tuple[str, str], list[re.Pattern[str]]] = {}
for _m in MARKERS:
    _COMPILED.setdefault((_m.axis, _m.feature), []).append(_compile(_m))


def split_sentences(text: str) -> list[str]:
    """Split a response into sentences on Japanese and English end punctuation and newlines."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


@functools.lru_cache(maxsize=1)
def _tagger():  # fugashi is untyped
    import fugashi  # only Japanese responses pay for the dictionary load

    return fugashi.Tagger()


def content_tokens(text: str) -> list[str]:
    """Content words: UniDic nouns/verbs/adjectives/adverbs for Japanese, all words for English.

    Japanese particles repeat in any sentence, so counting them would make every Japanese
    response look repetitive.
    """
    if _JAPANESE.search(text):
        return [
            w.feature.lemma or w.surface for w in _tagger()(text) if w.feature.pos1 in _CONTENT_POS
        ]
    return [w.lower() for w in _ENGLISH_WORD.findall(text)]


def _count(text: str, axis: str, feature: str) -> int:
    return sum(len(p.findall(text)) for p in _COMPILED[(axis, feature)])


def _coverage_pct(text: str, axis: str, feature: str) -> int:
    covered = [False] * len(text)
    for pattern in _COMPILED[(axis, feature)]:
        for match in pattern.finditer(text):
            covered[match.start() : match.end()] = [True] * (match.end() - match.start())
    word_chars = [i for i, ch in enumerate(text) if _WORD_CHAR.match(ch)]
    if not word_chars:
        return 0
    return round(100 * sum(covered[i] for i in word_chars) / len(word_chars))


def marker_features(text: str) -> dict[str, int]:
    """Count every marker feature and derived feature in one response.

    Parameters
    ----------
    text:
        The AI response.

    Returns
    -------
    dict[str, int]
        Feature name -> count (or percentage / 0-1 flag for derived features).

    >>> marker_features("本当に素晴らしい！")["praise"]
    1
    """
    features = {feature: _count(text, axis, feature) for axis, feature in _COMPILED}
    sentences = split_sentences(text)
    n = max(len(sentences), 1)
    hedged = sum(
        1
        for s in sentences
        if any(_count(s, "avoidant", f) for f in ("conjecture", "hedge", "both_sides"))
    )
    features["formulaic_pct"] = _coverage_pct(text, "mechanical", "set_phrase")
    features["hedged_pct"] = round(100 * hedged / n) if sentences else 0
    features["self_capability"] = sum(
        1 for s in sentences if _count(s, "self", "self_ref") and _count(s, "self", "capability")
    )
    tokens = content_tokens(text)
    ttr = len(set(tokens)) / len(tokens) if tokens else 1.0
    features["low_ttr"] = int(len(tokens) >= TTR_MIN_TOKENS and ttr < TTR_THRESHOLD)
    return features


def level_for(axis: str, features: dict[str, int]) -> int:
    """The highest ``LEVELS`` row of ``axis`` whose minimums all hold, else 1."""
    for row in LEVELS:
        if row.axis == axis and all(features.get(k, 0) >= v for k, v in row.requires.items()):
            return row.level
    return 1


def rate_response(text: str) -> dict[str, int]:
    """Levels 1-5 per axis for one AI response.

    Self-ingratiation: when praise of the user and self-reference co-occur and the response ends on itself
    (its last sentence holds a self-reference), the self axis takes the praise's level and the
    social axis is capped at 2 (Slight).

    Parameters
    ----------
    text:
        The AI response.

    Returns
    -------
    dict[str, int]
        ``{axis: level}`` for the four axes.

    >>> rate_response("今日は晴れです。")
    {'social': 1, 'avoidant': 1, 'mechanical': 1, 'self': 1}
    """
    features = marker_features(text)
    levels = {axis: level_for(axis, features) for axis in AXES}
    sentences = split_sentences(text)
    ends_on_self = bool(sentences) and _count(sentences[-1], "self", "self_ref") > 0
    if levels["social"] >= 3 and ends_on_self:
        levels["self"] = max(levels["self"], levels["social"])
        levels["social"] = 2
    return levels


def rate_tasks(tasks: Iterable[DialoguePair], *, timestamp: str) -> list[Annotation]:
    """Rate every task's response with the marker rules (annotator ``markers``).

    Parameters
    ----------
    tasks:
        Dialogue pairs; only ``response`` is read.
    timestamp:
        The timestamp written on every record (fixed, so artifacts are deterministic).

    Returns
    -------
    list[Annotation]
        One per task, in task order, with confidence ``MARKER_CONFIDENCE`` on every axis.
    """
    return [
        Annotation(
            id=task.id,
            annotator_id=MARKERS_ID,
            timestamp=timestamp,
            annotations=rate_response(task.response),
            confidence=dict.fromkeys(AXES, MARKER_CONFIDENCE),
        )
        for task in tasks
    ]
