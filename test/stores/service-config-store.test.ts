import { beforeAll, expect, it } from "bun:test";
import type { Db } from "../../db/client";
import { tenants } from "../../db/schema";
import { MemoryServiceConfigStore } from "../../src/outside/memory-store";
import { DrizzleServiceConfigStore, type ServiceConfigStore } from "../../src/outside/service-config";
import { type ContractKind, storeContract } from "../helpers/store-contract";

/** Each kind's database, to give Postgres the tenant rows its foreign key asks for. */
const databases = new Map<ContractKind, Db>();

storeContract<ServiceConfigStore>(
  "the outside-service settings store",
  (kind, db) => {
    if (db === null) return new MemoryServiceConfigStore();
    databases.set(kind, db);
    return new DrizzleServiceConfigStore(db);
  },
  (store, kind) => {
    beforeAll(async () => {
      await databases
        .get(kind)
        ?.insert(tenants)
        .values([{ id: "t1" }, { id: "t2" }]);
    });

    it("answers null for a service never set, and a setting once put", async () => {
      expect(await store().get("t1", "stripe")).toBeNull();
      await store().put("t1", "stripe", "sealed-1");
      expect(await store().get("t1", "stripe")).toBe("sealed-1");
      expect(await store().get("t2", "stripe")).toBeNull();
      expect(await store().get("t1", "recombee")).toBeNull();
    });

    it("replaces a setting put again, keeping one per tenant and service", async () => {
      await store().put("t1", "recombee", "old");
      await store().put("t1", "recombee", "new");
      expect(await store().get("t1", "recombee")).toBe("new");
      expect((await store().list("t1")).filter((s) => s === "recombee")).toEqual(["recombee"]);
    });

    it("lists a tenant's services only, and deletes one (true once, then false)", async () => {
      await store().put("t2", "listmonk", "l");
      await store().put("t2", "storyblok", "s");
      expect((await store().list("t2")).sort()).toEqual(["listmonk", "storyblok"]);
      expect(await store().delete("t2", "listmonk")).toBe(true);
      expect(await store().delete("t2", "listmonk")).toBe(false);
      expect(await store().get("t2", "listmonk")).toBeNull();
      expect(await store().list("t2")).toEqual(["storyblok"]);
      expect(await store().list("nobody")).toEqual([]);
      expect(await store().delete("nobody", "stripe")).toBe(false);
    });
  },
);
