"""Java-compatible UTF-8 text: ``new String(bytes, UTF_8)`` and ``String.getBytes(UTF_8)`` (HV-5).

Kafka decodes header keys with ``new String(keyBytes, StandardCharsets.UTF_8)``, which never fails:
each malformed sequence becomes one U+FFFD, with the JDK's own rule for how many bytes one
replacement covers. That rule differs from Python's ``errors="replace"``: an encoded surrogate such
as ``ED A0 80`` is one U+FFFD in Java and three in Python, and a truncated sequence at the end of
the input is always a single U+FFFD in Java. Encoding writes ``?`` for an unpaired surrogate.
"""

from __future__ import annotations

REPLACEMENT = "\ufffd"


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def _bad_second_of_three(lead: int, second: int) -> bool:
    # E0 needs A0..BF (anything lower is overlong); every lead needs a continuation byte.
    return (lead == 0xE0 and second & 0xE0 == 0x80) or not _is_continuation(second)


def _bad_second_of_four(lead: int, second: int) -> bool:
    # F0 needs 90..BF (overlong below), F4 needs 80..8F (above U+10FFFF otherwise).
    return (
        (lead == 0xF0 and not 0x90 <= second <= 0xBF)
        or (lead == 0xF4 and second & 0xF0 != 0x80)
        or not _is_continuation(second)
    )


def _malformed_length_of_four(lead: int, second: int, third: int) -> int:
    """How many bytes the JDK replaces with one U+FFFD for a bad four-byte sequence (1 to 3)."""
    if lead > 0xF4 or _bad_second_of_four(lead, second):
        return 1
    if not _is_continuation(third):
        return 2
    return 3


def decode_utf8_java(data: bytes) -> str:
    """The string JDK 17's ``new String(data, UTF_8)`` returns, replacement characters included (HV-5)."""
    try:
        # Well-formed UTF-8 decodes identically everywhere; only malformed input needs the JDK rules.
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _decode_with_jdk_replacement(data)


def _decode_with_jdk_replacement(data: bytes) -> str:
    out: list[str] = []
    end = len(data)
    pos = 0
    while pos < end:
        lead = data[pos]
        pos += 1
        if lead < 0x80:
            out.append(chr(lead))
        elif 0xC2 <= lead <= 0xDF:
            if pos < end:
                second = data[pos]
                if _is_continuation(second):
                    out.append(chr(((lead & 0x1F) << 6) | (second & 0x3F)))
                    pos += 1
                else:
                    out.append(REPLACEMENT)  # the second byte starts the next sequence
                continue
            out.append(REPLACEMENT)
            break
        elif 0xE0 <= lead <= 0xEF:
            if pos + 1 < end:
                second, third = data[pos], data[pos + 1]
                if _bad_second_of_three(lead, second):
                    out.append(REPLACEMENT)
                elif not _is_continuation(third):
                    out.append(REPLACEMENT)
                    pos += 1
                else:
                    pos += 2
                    char = ((lead & 0x0F) << 12) | ((second & 0x3F) << 6) | (third & 0x3F)
                    # An encoded surrogate is well-formed in shape but one malformed unit to the JDK.
                    out.append(REPLACEMENT if 0xD800 <= char <= 0xDFFF else chr(char))
                continue
            if pos < end and _bad_second_of_three(lead, data[pos]):
                out.append(REPLACEMENT)
                continue
            # A truncated sequence at the end: one replacement, and decoding stops.
            out.append(REPLACEMENT)
            break
        elif 0xF0 <= lead <= 0xF7:
            if pos + 2 < end:
                second, third, fourth = data[pos], data[pos + 1], data[pos + 2]
                code = ((lead & 0x07) << 18) | ((second & 0x3F) << 12) | ((third & 0x3F) << 6) | (fourth & 0x3F)
                shaped = _is_continuation(second) and _is_continuation(third) and _is_continuation(fourth)
                if shaped and 0x10000 <= code <= 0x10FFFF:
                    out.append(chr(code))
                    pos += 3
                else:
                    out.append(REPLACEMENT)
                    pos += _malformed_length_of_four(lead, second, third) - 1
                continue
            if lead > 0xF4 or (pos < end and _bad_second_of_four(lead, data[pos])):
                out.append(REPLACEMENT)
                continue
            pos += 1
            out.append(REPLACEMENT)
            if pos < end and not _is_continuation(data[pos]):
                continue
            break
        else:
            # Stray continuation bytes, overlong two-byte leads C0/C1, and F8..FF.
            out.append(REPLACEMENT)
    return "".join(out)


def encode_utf8_java(text: str) -> bytes:
    """The bytes of JDK's ``text.getBytes(UTF_8)``: pairs combine, an unpaired surrogate becomes ``?`` (HV-5)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    # A Python str may hold a surrogate pair as two code points, as a Java String does; join them
    # first, then let the encoder's "replace" write "?" for each surrogate left alone.
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return joined.encode("utf-8", "replace")
