// A minimal kstate testee in Go (spec/testee-protocol.md): the hello handshake, shutdown, zig-zag varints
// and varlongs, KIP-258 timestamped values and the header section of KIP-1271 (HeadersSerializer). Every
// other operation is answered "unsupported". Standard library only.
//
//	go build -o go_testee . && kstate conformance --impl "cmd:./go_testee"
//
// It reads bounded lines (TP-11: 16 MiB, 64 levels), answers every bad line with a typed internal_error and
// keeps serving, and decodes texts that are not valid Unicode from their UTF-16 hex form (TP-12), which Go's
// encoding/json could not carry as "\ud800" (it would turn it into U+FFFD).
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"regexp"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

const (
	protocolVersion = 1
	maxLineBytes    = 16 * 1024 * 1024 // TP-11
	maxDepth        = 64               // TP-11: the top-level object is level 1
)

// javaText is a string as Java holds it: UTF-16 code units, possibly with an unpaired surrogate (TP-12).
type javaText []uint16

// refusal is Kafka throwing (OPS-3): answered as an error, never as an internal error.
type refusal struct{ message string }

func (r refusal) Error() string { return r.message }

func refuse(format string, args ...any) error { return refusal{fmt.Sprintf(format, args...)} }

// --- reading values of the neutral vocabulary (OPS-2) ------------------------------------------------------

func integer(input map[string]any, field string, min, max *big.Int) (*big.Int, error) {
	number, ok := input[field].(json.Number)
	if !ok {
		return nil, refuse("%s: expected an integer, got %T", field, input[field])
	}
	value, ok := new(big.Int).SetString(number.String(), 10)
	if !ok {
		return nil, refuse("%s: %s is not an integer", field, number)
	}
	if value.Cmp(min) < 0 || value.Cmp(max) > 0 {
		return nil, refuse("%s: %s out of range", field, number)
	}
	return value, nil
}

func hexBytes(value any, field string) ([]byte, error) {
	text, ok := value.(string)
	if !ok {
		return nil, refuse("%s: expected hex bytes, got %T", field, value)
	}
	data, err := hex.DecodeString(text)
	if err != nil {
		return nil, refuse("%s: not a hex string", field)
	}
	return data, nil
}

var (
	int32Min = big.NewInt(math.MinInt32)
	int32Max = big.NewInt(math.MaxInt32)
	int64Min = big.NewInt(math.MinInt64)
	int64Max = big.NewInt(math.MaxInt64)
)

// --- codecs ------------------------------------------------------------------------------------------------

func writeUnsigned(out []byte, u uint64) []byte {
	for u >= 0x80 {
		out = append(out, byte(u&0x7f|0x80))
		u >>= 7
	}
	return append(out, byte(u))
}

func zigzag64(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

// readUnsigned follows Kafka's ByteUtils loop: at most 5 (int) or 10 (long) bytes; the final byte is shifted
// in whole and the result wrapped to the Java type.
func readUnsigned(data []byte, maxShift uint) (uint64, int, error) {
	var value uint64
	var shift uint
	for pos := 0; ; pos++ {
		if pos >= len(data) {
			return 0, 0, refuse("truncated varint")
		}
		b := uint64(data[pos])
		if b&0x80 == 0 {
			return value | b<<shift, pos + 1, nil
		}
		value |= (b & 0x7f) << shift
		shift += 7
		if shift > maxShift {
			return 0, 0, refuse("varint too long")
		}
	}
}

func bytesOutput(data []byte) map[string]any {
	return map[string]any{"bytes": hex.EncodeToString(data), "size": len(data)}
}

// javaUTF8 is String.getBytes(UTF_8): a pair is one 4-byte character, an unpaired surrogate is '?' (HV-16).
func javaUTF8(units javaText) []byte {
	var out []byte
	for i := 0; i < len(units); i++ {
		u := rune(units[i])
		switch {
		case utf16.IsSurrogate(u) && u < 0xdc00 && i+1 < len(units) && units[i+1] >= 0xdc00 && units[i+1] <= 0xdfff:
			out = utf8.AppendRune(out, utf16.DecodeRune(u, rune(units[i+1])))
			i++
		case utf16.IsSurrogate(u):
			out = append(out, '?')
		default:
			out = utf8.AppendRune(out, u)
		}
	}
	return out
}

func headerKey(value any, field string) ([]byte, error) {
	switch key := value.(type) {
	case string:
		return []byte(key), nil
	case javaText:
		return javaUTF8(key), nil
	case nil:
		return nil, refuse("%s: a null key cannot be encoded (HV-2)", field)
	default:
		return nil, refuse("%s: expected a string, got %T", field, value)
	}
}

func serializeHeaders(input map[string]any) (map[string]any, error) {
	if input["headers"] == nil {
		return map[string]any{"bytes": ""}, nil // HV-1: null headers are zero bytes
	}
	headers, ok := input["headers"].([]any)
	if !ok {
		return nil, refuse("headers: expected a list")
	}
	if len(headers) == 0 {
		return map[string]any{"bytes": ""}, nil
	}
	out := writeUnsigned(nil, zigzag64(int64(len(headers))))
	for i, item := range headers {
		pair, ok := item.([]any)
		field := fmt.Sprintf("headers[%d]", i)
		if !ok || len(pair) != 2 {
			return nil, refuse("%s: expected a [key, value] pair", field)
		}
		key, err := headerKey(pair[0], field+"[0]")
		if err != nil {
			return nil, err
		}
		out = append(writeUnsigned(out, zigzag64(int64(len(key)))), key...)
		if pair[1] == nil {
			out = writeUnsigned(out, zigzag64(-1))
			continue
		}
		value, err := hexBytes(pair[1], field+"[1]")
		if err != nil {
			return nil, err
		}
		out = append(writeUnsigned(out, zigzag64(int64(len(value)))), value...)
	}
	return map[string]any{"bytes": hex.EncodeToString(out)}, nil
}

func timestampedParts(input map[string]any) ([]byte, int64, error) {
	data, err := hexBytes(input["bytes"], "bytes")
	if err != nil {
		return nil, 0, err
	}
	if len(data) < 8 {
		return nil, 0, refuse("need 8 timestamp bytes, got %d", len(data))
	}
	return data[8:], int64(binary.BigEndian.Uint64(data)), nil
}

// readUnsignedInput reads the unsigned varint of the "bytes" input, as readUnsigned does (PRIM-5, PRIM-7).
func readUnsignedInput(in map[string]any, maxShift uint) (uint64, int, error) {
	data, err := hexBytes(in["bytes"], "bytes")
	if err != nil {
		return 0, 0, err
	}
	return readUnsigned(data, maxShift)
}

var operations = map[string]func(map[string]any) (map[string]any, error){
	"varint.write_varint": func(in map[string]any) (map[string]any, error) {
		v, err := integer(in, "value", int32Min, int32Max)
		if err != nil {
			return nil, err
		}
		n := int32(v.Int64())
		return bytesOutput(writeUnsigned(nil, uint64(uint32(n<<1)^uint32(n>>31)))), nil
	},
	"varint.write_varlong": func(in map[string]any) (map[string]any, error) {
		v, err := integer(in, "value", int64Min, int64Max)
		if err != nil {
			return nil, err
		}
		return bytesOutput(writeUnsigned(nil, zigzag64(v.Int64()))), nil
	},
	"varint.read_varint": func(in map[string]any) (map[string]any, error) {
		raw, used, err := readUnsignedInput(in, 28)
		if err != nil {
			return nil, err
		}
		u := uint32(raw)
		return map[string]any{"value": int32(u>>1) ^ -int32(u&1), "bytes_consumed": used}, nil
	},
	"varint.read_varlong": func(in map[string]any) (map[string]any, error) {
		raw, used, err := readUnsignedInput(in, 63)
		if err != nil {
			return nil, err
		}
		return map[string]any{"value": int64(raw>>1) ^ -int64(raw&1), "bytes_consumed": used}, nil
	},
	"timestamped.serialize": func(in map[string]any) (map[string]any, error) {
		ts, err := integer(in, "timestamp", int64Min, int64Max)
		if err != nil {
			return nil, err
		}
		if in["value"] == nil {
			return map[string]any{"bytes": nil}, nil
		}
		value, err := hexBytes(in["value"], "value")
		if err != nil {
			return nil, err
		}
		out := binary.BigEndian.AppendUint64(nil, uint64(ts.Int64()))
		return map[string]any{"bytes": hex.EncodeToString(append(out, value...))}, nil
	},
	"timestamped.deserialize": func(in map[string]any) (map[string]any, error) {
		if in["bytes"] == nil {
			return map[string]any{"result": nil}, nil
		}
		value, ts, err := timestampedParts(in)
		if err != nil {
			return nil, err
		}
		return map[string]any{"result": map[string]any{"value": hex.EncodeToString(value), "timestamp": ts}}, nil
	},
	"header_values.serialize_headers": serializeHeaders,
}

// --- the protocol ------------------------------------------------------------------------------------------

type wireError struct{ kind, message string }

func (w wireError) Error() string { return w.message }

// readLine returns the next line without its newline; an overlong line is drained in pieces and refused.
func readLine(reader *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := reader.ReadSlice('\n')
		if len(line)+len(chunk) > maxLineBytes+1 {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = reader.ReadSlice('\n')
			}
			return nil, wireError{"LineTooLong", fmt.Sprintf("a line longer than %d bytes (TP-11)", maxLineBytes)}
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == io.EOF && len(line) == 0 {
			return nil, io.EOF
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		return bytes.TrimSuffix(line, []byte("\n")), nil
	}
}

// nestingDepth scans the raw line, skipping strings, so that a deep line is refused before it is parsed.
func nestingDepth(line []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range line {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth > deepest {
				deepest = depth
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// decodeTexts turns every {"encoding":"utf-16be","hex":...} into a javaText (TP-12).
func decodeTexts(value any) (any, error) {
	switch v := value.(type) {
	case map[string]any:
		if len(v) == 2 && v["encoding"] == "utf-16be" {
			if units, ok := v["hex"].(string); ok {
				raw, err := hex.DecodeString(units)
				if err != nil || len(raw)%2 != 0 {
					return nil, wireError{"BadText", "an encoded text's hex is not whole UTF-16 code units (TP-12)"}
				}
				text := make(javaText, len(raw)/2)
				for i := range text {
					text[i] = binary.BigEndian.Uint16(raw[2*i:])
				}
				return text, nil
			}
		}
		for key, item := range v {
			decoded, err := decodeTexts(item)
			if err != nil {
				return nil, err
			}
			v[key] = decoded
		}
	case []any:
		for i, item := range v {
			decoded, err := decodeTexts(item)
			if err != nil {
				return nil, err
			}
			v[i] = decoded
		}
	}
	return value, nil
}

func parseLine(line []byte) (map[string]any, error) {
	if !utf8.Valid(line) {
		return nil, wireError{"NotJson", "the line is not UTF-8 (TP-1)"}
	}
	if nestingDepth(line) > maxDepth {
		return nil, wireError{"NestingTooDeep", fmt.Sprintf("nested deeper than %d levels (TP-11)", maxDepth)}
	}
	decoder := json.NewDecoder(bytes.NewReader(line))
	decoder.UseNumber()
	var message any
	if err := decoder.Decode(&message); err != nil {
		return nil, wireError{"NotJson", "the line is not JSON: " + err.Error()}
	}
	if _, err := decoder.Token(); err != io.EOF {
		return nil, wireError{"NotJson", "the line holds more than one JSON value"}
	}
	decoded, err := decodeTexts(message)
	if err != nil {
		return nil, err
	}
	object, ok := decoded.(map[string]any)
	if !ok {
		return nil, wireError{"NotARequest", "not a request: expected an object with id, op and input"}
	}
	return object, nil
}

var validID = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)

func internalError(id any, kind, message string) map[string]any {
	return map[string]any{"id": id, "internal_error": map[string]any{"type": kind, "message": message}}
}

func answer(message map[string]any) (map[string]any, bool) {
	number, ok := message["id"].(json.Number)
	if !ok || !validID.MatchString(number.String()) {
		return internalError(nil, "BadId", "the request id is not a non-negative integer"), false
	}
	id := number
	name, ok := message["op"].(string)
	if !ok {
		return internalError(id, "BadOp", fmt.Sprintf("the op must be a string, not %T", message["op"])), false
	}
	input, isObject := message["input"].(map[string]any)
	if _, present := message["input"]; !present {
		input, isObject = map[string]any{}, true
	}
	switch name {
	case "hello":
		if !isObject || input["protocol"] != json.Number(fmt.Sprint(protocolVersion)) {
			return map[string]any{"id": id, "error": map[string]any{"type": "ProtocolVersion",
				"message": fmt.Sprintf("this testee speaks protocol %d", protocolVersion)}}, false
		}
		capabilities := make([]string, 0, len(operations))
		for op := range operations {
			capabilities = append(capabilities, op)
		}
		sort.Strings(capabilities)
		return map[string]any{"id": id, "output": map[string]any{"protocol": protocolVersion,
			"implementation": "go-example", "version": "0.1", "capabilities": capabilities}}, false
	case "shutdown":
		return map[string]any{"id": id, "output": map[string]any{}}, true
	}
	handler, known := operations[name]
	if !known {
		return map[string]any{"id": id, "unsupported": true, "reason": "no operation " + truncate(name, 200)}, false
	}
	if !isObject {
		return internalError(id, "BadInput", "input must be a JSON object"), false
	}
	output, err := handler(input)
	var refused refusal
	if errors.As(err, &refused) {
		return map[string]any{"id": id, "error": map[string]any{"type": "Refusal", "message": refused.message}}, false
	}
	if err != nil {
		return internalError(id, "InternalError", err.Error()), false
	}
	return map[string]any{"id": id, "output": output}, false
}

func truncate(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	return strings.ToValidUTF8(text[:limit], "")
}

func main() {
	reader := bufio.NewReaderSize(os.Stdin, 1<<20)
	writer := bufio.NewWriter(os.Stdout)
	for {
		var response map[string]any
		stop := false
		line, err := readLine(reader)
		var wire wireError
		switch {
		case err == io.EOF:
			return
		case errors.As(err, &wire):
			response = internalError(nil, wire.kind, wire.message)
		case err != nil:
			fmt.Fprintln(os.Stderr, "reading stdin:", err)
			os.Exit(1)
		case len(bytes.TrimSpace(line)) == 0:
			continue
		default:
			message, err := parseLine(line)
			if errors.As(err, &wire) {
				response = internalError(nil, wire.kind, wire.message)
			} else {
				response, stop = answer(message)
			}
		}
		encoded, err := json.Marshal(response)
		if err != nil {
			encoded, _ = json.Marshal(internalError(response["id"], "OutputNotJson", err.Error()))
		}
		writer.Write(append(encoded, '\n'))
		writer.Flush()
		if stop {
			return
		}
	}
}
