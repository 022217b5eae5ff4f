import { describe, expect, it } from "bun:test";
import { isRefusal, parseHead, type RequestHead } from "../../../src/http/h1/head";

const parsed = (text: string): RequestHead => {
  const head = parseHead(text);
  if (isRefusal(head)) throw new Error(`refused: ${head.status} ${head.message}`);
  return head;
};

describe("parseHead", () => {
  it("keeps every field's name as sent, common or not, in order, flat beside its value", () => {
    const head = parsed(
      "POST /v1/decide?x=1 HTTP/1.1\r\nHost: svc.example\r\ncontent-type: application/json\r\n" +
        "CONTENT-TYPE: text/plain\r\nX-Api-Key: k1\r\nx-custom:  spaced \r\ncontent-length: 2",
    );
    expect(head.method).toBe("POST");
    expect(head.target).toBe("/v1/decide?x=1");
    expect(head.http10).toBe(false);
    expect(head.fields).toEqual([
      "Host",
      "svc.example",
      "content-type",
      "application/json",
      "CONTENT-TYPE",
      "text/plain",
      "X-Api-Key",
      "k1",
      "x-custom",
      "spaced",
      "content-length",
      "2",
    ]);
    expect(head.host).toBe("svc.example");
    expect(head.contentLength).toBe(2);
  });

  it("reads the version and the method in place: HTTP/1.0, another version 505, another method 501", () => {
    const old = parsed("GET / HTTP/1.0\r\nHost: a");
    expect([old.method, old.http10, old.keepAlive]).toEqual(["GET", true, false]);
    expect(parseHead("GET / HTTP/2.0\r\nHost: a")).toMatchObject({ status: 505 });
    expect(parseHead("PUTS / HTTP/1.1\r\nHost: a")).toMatchObject({ status: 501 });
    expect(parseHead("get / HTTP/1.1\r\nHost: a")).toMatchObject({ status: 501 });
    expect(parsed("OPTIONS * HTTP/1.1\r\nHost: a").method).toBe("OPTIONS");
  });

  it("takes 100 fields and refuses the 101st with 431", () => {
    const fields = (n: number) => Array.from({ length: n }, (_, i) => `x-f${i}: ${i}`).join("\r\n");
    expect(parsed(`GET / HTTP/1.1\r\n${fields(100)}`).fields).toHaveLength(200);
    expect(parseHead(`GET / HTTP/1.1\r\n${fields(101)}`)).toMatchObject({ status: 431 });
  });
});
