import { expect } from "bun:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";

// biome-ignore lint/suspicious/noExplicitAny: the tests walk an OpenAPI document as plain JSON.
export type Json = Record<string, any>;

/** The OpenAPI document an answer carries, once it is checked to be a 200 in JSON. */
export async function openApiDocument(res: Response): Promise<Json> {
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toStartWith("application/json");
  return (await res.json()) as Json;
}

/** Each operation of an OpenAPI document, with its path and method. */
export function operationsOf(doc: Json): { path: string; method: string; op: Json }[] {
  return Object.entries(doc.paths as Json).flatMap(([path, ops]) =>
    Object.entries(ops as Json).map(([method, op]) => ({ path, method, op: op as Json })),
  );
}

/** Checks the document is valid OpenAPI by a maintained validator. */
export async function expectValidOpenApi(doc: Json): Promise<void> {
  const result = await new Validator().validate(doc as never);
  expect(result.errors ?? []).toEqual([]);
  expect(result.valid).toBe(true);
}

/** A JSON Schema 2020-12 validator with formats, for answers checked against the document's schemas. */
export function answerValidator(): Ajv2020 {
  const ajv = new Ajv2020({ strict: false });
  addFormats(ajv);
  return ajv;
}
