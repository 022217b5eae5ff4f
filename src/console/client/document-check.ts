// What the editor checks as the author types: the text as JSON, then the document with the very
// checks a deploy runs (src/core/document.ts, bundled into the editor), each error placed on the
// text at its JSON pointer. No DOM here, so it is tested in Bun (test/console/document-check.test.ts).
import { type Node, type ParseError, type ParseErrorCode, parseTree, printParseErrorCode } from "jsonc-parser";
import { validateSiteDocument } from "../../core/document";

/** One problem with the text: where it is (offsets into the text), its JSON pointer and what is wrong. */
export interface DocumentProblem {
  readonly from: number;
  readonly to: number;
  /** A JSON pointer, "/" for the whole document (as the server's error summary shows it). */
  readonly path: string;
  readonly message: string;
}

const SYNTAX_WORDS: Partial<Record<string, string>> = {
  InvalidSymbol: "an unexpected character",
  InvalidNumberFormat: "a malformed number",
  PropertyNameExpected: "a member name in double quotes expected",
  ValueExpected: "a value expected",
  ColonExpected: "a colon expected",
  CommaExpected: "a comma expected",
  CloseBraceExpected: "a closing } expected",
  CloseBracketExpected: "a closing ] expected",
  EndOfFileExpected: "nothing more expected after the document",
  InvalidCommentToken: "comments are not JSON",
  UnexpectedEndOfComment: "comments are not JSON",
  UnexpectedEndOfString: "a string is not closed",
  UnexpectedEndOfNumber: "a number is cut short",
  InvalidUnicode: "a malformed \\u escape",
  InvalidEscapeCharacter: "a malformed escape",
  InvalidCharacter: "a control character inside a string",
};

function lineAndColumn(text: string, offset: number): string {
  let line = 1;
  let start = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      start = i + 1;
    }
  }
  return `line ${line}, column ${offset - start + 1}`;
}

function syntaxProblem(text: string, error: ParseError): DocumentProblem {
  const code = printParseErrorCode(error.error as ParseErrorCode);
  const from = Math.min(error.offset, text.length);
  return {
    from,
    to: Math.min(text.length, from + Math.max(1, error.length)),
    path: "/",
    message: `not JSON: ${SYNTAX_WORDS[code] ?? code} at ${lineAndColumn(text, from)}`,
  };
}

/** A JSON pointer's reference tokens (RFC 6901: ~1 is "/", ~0 is "~"). */
export function pointerTokens(pointer: string): string[] {
  if (pointer === "" || pointer === "/") return [];
  return pointer
    .split("/")
    .slice(1)
    .map((t) => t.replaceAll("~1", "/").replaceAll("~0", "~"));
}

/** The node a pointer names, or the nearest ancestor there is (a missing member's object). */
function nodeAt(root: Node, tokens: readonly string[]): { node: Node; whole: boolean } {
  let at = root;
  for (const token of tokens) {
    let next: Node | undefined;
    if (at.type === "object") {
      const member = at.children?.find((p) => p.children?.[0]?.value === token);
      next = member?.children?.[1];
    } else if (at.type === "array" && /^(0|[1-9]\d*)$/.test(token)) {
      next = at.children?.[Number(token)];
    }
    if (next === undefined) return { node: at, whole: false };
    at = next;
  }
  return { node: at, whole: true };
}

/**
 * Where on the text an error at `pointer` belongs: a scalar value itself; an object or array by
 * its member name (or its opening bracket), so a problem with a whole feature marks one line,
 * not the feature's hundred.
 */
export function rangeOfPointer(root: Node, pointer: string): { from: number; to: number } {
  const { node } = nodeAt(root, pointerTokens(pointer));
  if (node.type !== "object" && node.type !== "array") return { from: node.offset, to: node.offset + node.length };
  const name = node.parent?.type === "property" ? node.parent.children?.[0] : undefined;
  if (name) return { from: name.offset, to: name.offset + name.length };
  return { from: node.offset, to: node.offset + 1 };
}

/**
 * The problems of a site document's text: JSON syntax first (nothing else is checked then),
 * then the deploy's own checks, each at its pointer. An empty list means a deploy would take it.
 */
export function checkDocumentText(text: string): DocumentProblem[] {
  if (text.trim() === "") return [{ from: 0, to: 0, path: "/", message: "not JSON: the document is empty" }];
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { disallowComments: true, allowTrailingComma: false });
  if (errors.length > 0 || root === undefined) {
    return errors.length > 0
      ? errors.slice(0, 20).map((e) => syntaxProblem(text, e))
      : [{ from: 0, to: text.length, path: "/", message: "not JSON" }];
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return [{ from: 0, to: text.length, path: "/", message: `not JSON: ${(error as Error).message}` }];
  }
  const checked = validateSiteDocument(value);
  if (checked.ok) return [];
  return checked.errors
    .slice(0, 50)
    .map((e) => ({ ...rangeOfPointer(root, e.path), path: e.path || "/", message: e.message }));
}
