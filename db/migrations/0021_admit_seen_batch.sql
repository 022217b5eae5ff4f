-- Seen meters' new members admitted on a Postgres server in batches (src/counters/seen-admissions.ts):
-- one call for many, each admitted as svc_admit_seen (0020) admits one. Calls are taken in the
-- order of their readers' locks (then their order in the batch), so two batches over the same
-- readers take turns rather than deadlock; each call takes its reader's lock, then adds its item in
-- a statement of its own, whose snapshot sees every member committed before the lock was granted
-- and the batch's own earlier members. svc_admit_seen stays for processes not yet upgraded: it
-- takes the same lock.
CREATE FUNCTION "svc_admit_seen_batch"("p_meter_ids" integer[], "p_subjects" text[], "p_items" text[], "p_allowances" integer[])
RETURNS TABLE ("ord" bigint, "before" bigint, "member" boolean, "added" bigint)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  c record;
BEGIN
  FOR c IN SELECT u.m_id, u.subj, u.itm, u.allow, u.n
    FROM unnest(p_meter_ids, p_subjects, p_items, p_allowances) WITH ORDINALITY AS u(m_id, subj, itm, allow, n)
    ORDER BY u.m_id, hashtext(u.subj), u.n
  LOOP
    PERFORM pg_advisory_xact_lock(c.m_id, hashtext(c.subj));
    RETURN QUERY
      WITH s AS (SELECT m.item FROM meter_seen m WHERE m.meter_id = c.m_id AND m.subject = c.subj),
        ins AS (INSERT INTO meter_seen (meter_id, subject, item)
          SELECT c.m_id, c.subj, c.itm
          WHERE (SELECT count(*) FROM s) < c.allow AND NOT EXISTS (SELECT 1 FROM s WHERE s.item = c.itm)
          ON CONFLICT DO NOTHING RETURNING 1)
      SELECT c.n, (SELECT count(*) FROM s), EXISTS (SELECT 1 FROM s WHERE s.item = c.itm), (SELECT count(*) FROM ins);
  END LOOP;
END
$$;
