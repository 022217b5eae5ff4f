import { describe, expect, it } from "bun:test";
import { claimsOf, MAX_ORGS_IN_COOKIE } from "../../src/orgs/store";

const seat = (i: number, role = "member") => ({ id: `org-${i}`, slug: `slug-${i}`, role });

describe("the access cookie's organizations (claimsOf)", () => {
  it("puts the active organization first, then the others oldest first", () => {
    const claims = claimsOf([seat(1, "owner"), seat(2), seat(3, "admin")], "org-3");
    expect(claims.activeOrg).toEqual({ id: "org-3", slug: "slug-3" });
    expect(Object.entries(claims.orgs)).toEqual([
      ["org-3", "admin"],
      ["org-1", "owner"],
      ["org-2", "member"],
    ]);
  });

  it("names no active organization when the user holds no seat in it, or none is set", () => {
    expect(claimsOf([seat(1)], "org-9")).toEqual({ orgs: { "org-1": "member" }, activeOrg: null });
    expect(claimsOf([seat(1)], null).activeOrg).toBeNull();
    expect(claimsOf([], "org-1")).toEqual({ orgs: {}, activeOrg: null });
  });

  it("names at most the cookie's limit, keeping the active one when it is the newest seat", () => {
    const seats = Array.from({ length: MAX_ORGS_IN_COOKIE + 5 }, (_, i) => seat(i));
    const newest = `org-${MAX_ORGS_IN_COOKIE + 4}`;
    const claims = claimsOf(seats, newest);
    const named = Object.keys(claims.orgs);
    expect(named).toHaveLength(MAX_ORGS_IN_COOKIE);
    expect(named[0]).toBe(newest);
    expect(named.slice(1)).toEqual(seats.slice(0, MAX_ORGS_IN_COOKIE - 1).map((s) => s.id));
    expect(Object.keys(claimsOf(seats, null).orgs)).toEqual(seats.slice(0, MAX_ORGS_IN_COOKIE).map((s) => s.id));
  });
});
