import { readFileSync } from "node:fs";
import { CliError, type Commands } from "../context";

interface ContentKeyInfo {
  id: string;
  fingerprint: string;
  createdAt: string;
  rotatedAt: string | null;
}

/** `svc content-keys ...`: a site's content-signing keys (ids and fingerprints; secrets are write-only). */
export const contentKeyCommands: Commands = {
  "content-keys list": async ({ tenant, need, call }) => {
    const [site = ""] = need(1, "content-keys list <site>");
    const out = (await call("GET", `/admin/tenants/${tenant}/sites/${encodeURIComponent(site)}/content-keys`)) as {
      contentKeys: ContentKeyInfo[];
    };
    const lines = out.contentKeys.map((k) => [k.id, k.fingerprint, k.createdAt, k.rotatedAt ?? "never"].join("\t"));
    return { json: out, text: ["ID\tFINGERPRINT\tCREATED\tROTATED", ...lines].join("\n") };
  },
  "content-keys rotate": async ({ values, tenant, need, call }) => {
    const [site = "", keyId = ""] = need(2, "content-keys rotate <site> <keyId> [--secret-file F]");
    let secret: string | undefined;
    const file = values["secret-file"];
    if (file !== undefined) {
      try {
        secret = readFileSync(file, "utf8").trim();
      } catch (error) {
        throw new CliError(`cannot read ${file}: ${(error as Error).message}`);
      }
    }
    const out = (await call(
      "POST",
      `/admin/tenants/${tenant}/sites/${encodeURIComponent(site)}/content-keys/${encodeURIComponent(keyId)}/rotate`,
      secret === undefined ? {} : { secret },
    )) as { contentKey: ContentKeyInfo; secret?: string };
    const head = `rotated content key ${out.contentKey.id} (${out.contentKey.fingerprint})`;
    return {
      json: out,
      text:
        out.secret === undefined ? head : `${out.secret}\n(${head}; this secret is shown once: put it in your CMS now)`,
    };
  },
};
