import { siteDocumentJsonSchema } from "../../core/document";
import type { Commands } from "../context";

/** `svc schema`: the site-document JSON Schema, printed without a server. */
export const schemaCommands: Commands = {
  schema: async () => ({ json: siteDocumentJsonSchema(), text: JSON.stringify(siteDocumentJsonSchema(), null, 2) }),
};
