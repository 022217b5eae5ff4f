import { Elysia } from "elysia";
import { type JsonApiDeps, jsonApi } from "../http/error-plugins";
import { type CredentialDeps, credentials } from "../identity/credentials";
import { MintGiftBody, MintGiftReply, RevokeGiftBody, RevokeGiftReply } from "./model";
import { type GiftDeps, mintGift, revokeGift } from "./service";

/** The gift routes' deps: the key credential's and the gift service's. */
export type GiftRouteDeps = CredentialDeps & GiftDeps;

/**
 * Gift links, server to server (`/v1` only; a key of the site): the publisher's back end mints a
 * link for its signed-in reader and revokes it on their behalf. docs/gift-links.md.
 */
export function giftRoutes(deps: GiftRouteDeps & JsonApiDeps) {
  return new Elysia({ prefix: "/v1" })
    .use(jsonApi(deps))
    .use(credentials(deps))
    .guard({ apiKey: { anySiteOfTenant: false } })
    .post(
      "/gift-links",
      async ({ site, body, set }) => {
        const minted = await mintGift(deps, site, body);
        set.status = 201;
        return minted;
      },
      { body: MintGiftBody, response: { 201: MintGiftReply } },
    )
    .post("/gift-links/revoke", ({ site, body }) => revokeGift(deps, site, body.giftId, body.userId), {
      body: RevokeGiftBody,
      response: { 200: RevokeGiftReply },
    });
}
