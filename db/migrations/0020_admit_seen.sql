-- A seen meter's new member admitted on a Postgres server in one round trip instead of four
-- (begin, the reader's lock, the conditional insert, commit): a volatile function's statements
-- each take a new snapshot, so the insert sees every member committed before the lock was
-- granted, as the transaction did. Two processes admitting to one reader at once take turns.
CREATE FUNCTION "svc_admit_seen"("p_meter_id" integer, "p_subject" text, "p_item" text, "p_allowance" integer)
RETURNS TABLE ("before" bigint, "member" boolean, "added" bigint)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(p_meter_id, hashtext(p_subject));
  RETURN QUERY
    WITH s AS (SELECT m.item FROM meter_seen m WHERE m.meter_id = p_meter_id AND m.subject = p_subject),
      ins AS (INSERT INTO meter_seen (meter_id, subject, item)
        SELECT p_meter_id, p_subject, p_item
        WHERE (SELECT count(*) FROM s) < p_allowance AND NOT EXISTS (SELECT 1 FROM s WHERE s.item = p_item)
        ON CONFLICT DO NOTHING RETURNING 1)
    SELECT (SELECT count(*) FROM s), EXISTS (SELECT 1 FROM s WHERE s.item = p_item), (SELECT count(*) FROM ins);
END
$$;
