"""Gherkin contracts, decisions and the documented reads, driven by the
UNMODIFIED Threadify Python SDK 0.4.0 against running engines
(test/sdk/python_test.go; how to assemble the SDK: docs/contributors/testing.md).

Env: THREADENGINE_PYTHON_SDK_DIR (the directory holding the SDK's `threadify/`
package), ENGINE_A, ENGINE_B (http://host:port of two replicas on one
database; B may equal A), API_KEY (a member key), STORE (label only).
Contracts payment_processing, shipping_confirmation and fresh_pay are
uploaded by the caller. The SDK has no can/next: those are asked over
GraphQL with the same key.

Prints one JSON line: {"store", "passed": [...], "failed": [...], "notes": {...}}.
"""

import asyncio
import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.environ["THREADENGINE_PYTHON_SDK_DIR"])

import httpx  # noqa: E402

from threadify import (  # noqa: E402
    HistoryQueryOptions,
    RefQuery,
    Threadify,
    ThreadifyError,
    WaitOptions,
)

A = os.environ["ENGINE_A"]
B = os.environ.get("ENGINE_B") or A
KEY = os.environ["API_KEY"]
STORE = os.environ.get("STORE", "?")
RUN = str(int(time.time() * 1000))

passed: list[str] = []
failed: list[str] = []
notes: dict = {}


def check(name: str, cond: bool, got=None):
    (passed if cond else failed).append(name if cond else f"{name}: got {got!r}")


async def gql(base: str, query: str, variables: dict):
    # The Python SDK has no can/next; the same key asks GraphQL directly,
    # with the header the SDK's own GraphQLClient sends.
    async with httpx.AsyncClient() as c:
        r = await c.post(base + "/graphql", json={"query": query, "variables": variables},
                         headers={"X-API-Key": KEY})
        return r.status_code, r.json()


CAN_NEXT = """query($t: ID!, $a: String!) {
  can(threadId: $t, action: $a) { allowed status reason missingSteps previousStep }
  next(threadId: $t) { paths { actions status reason } }
}"""


async def decide(tid: str, action: str):
    status, body = await gql(A, CAN_NEXT, {"t": tid, "a": action})
    if status != 200 or body.get("errors"):
        return {"error": body}
    d = body["data"]
    return {"can": d["can"]["status"], "reason": d["can"]["reason"],
            "next": [p["actions"][0] for p in d["next"]["paths"]]}


async def refused(coro):
    try:
        r = await coro
        return {"accepted": getattr(r, "status", r)}
    except Exception as e:  # noqa: BLE001
        resp = getattr(e, "response", None) or {}
        return {"type": type(e).__name__, "message": str(e), "code": resp.get("code"),
                "sdk_code": getattr(e, "code", None)}


async def connect(base: str, service: str):
    # engine_url is 0.4.0's documented way to point the SDK at an engine.
    return await Threadify.connect(KEY, service_name=service, engine_url=base)


async def payment():
    reviewer = await connect(A, "reviewer-service")
    payer = await connect(A, "payment_processor-service")
    t = await reviewer.thread(f"pay-{RUN}", {"contract": "payment_processing", "role": "reviewer",
                                            "label": "Pay 1", "refs": {"order": f"O-{RUN}"}})
    notes["paymentThread"] = t.thread_id
    dec = {"before_approval": await decide(t.thread_id, "charge")}
    check("payment: thread() binds contract version 1", t.contract_version == 1, t.contract_version)
    check("decision: can(charge) before approval is denied (missing approval)",
          dec["before_approval"].get("can") == "denied" and "approval" in dec["before_approval"].get("reason", ""),
          dec["before_approval"])
    check("decision: next() before approval offers approval",
          dec["before_approval"].get("next") == ["approval"], dec["before_approval"])
    await t.step("approval").add_context({"reference": "PAY-1"}).success("approved")
    pt = await payer.join(thread_id=t.thread_id, role="payment_processor")
    dec["after_approval"] = await decide(t.thread_id, "charge")
    # next() answers for the caller's roles: the key holds both parties here.
    check("decision: can(charge) after approval is allowed", dec["after_approval"].get("can") == "allowed",
          dec["after_approval"])
    check("decision: next() after approval offers charge", "charge" in (dec["after_approval"].get("next") or []),
          dec["after_approval"])

    zero = await refused(pt.step("charge").add_context({"amount": 0, "currency": "GBP", "reference": "PAY-1"}).success())
    jpy = await refused(pt.step("charge").add_context({"amount": 12.5, "currency": "JPY", "reference": "PAY-1"}).success())
    # The same refusal on the SDK's correlated path (wait_for=True): ThreadifyError with the reply's code.
    jpy_wait = await refused(pt.step("charge").add_context({"amount": 13, "currency": "JPY", "reference": "PAY-1"})
                             .success(wait_for=True))
    notes.update(zero=zero, jpy=jpy, jpyWaitFor=jpy_wait)
    check("content: amount 0 refused with field/rule message",
          'content field "amount" violates gt rule: must be a number greater than 0' in zero.get("message", ""), zero)
    check("content: currency JPY refused with field/rule message",
          'content field "currency" violates one_of rule: must be one of "GBP", "USD", "EUR"' in jpy.get("message", ""), jpy)
    check("content: wait_for=True path surfaces code content_rule_failed",
          jpy_wait.get("code") == "content_rule_failed" and jpy_wait.get("sdk_code") == "THREADIFY_REQUEST_FAILED"
          and "currency" in jpy_wait.get("message", ""), jpy_wait)
    dec["after_refusals"] = await decide(t.thread_id, "charge")
    check("content: refusals leave the thread active and charge still allowed",
          dec["after_refusals"].get("can") == "allowed", dec["after_refusals"])
    ok = await pt.step("charge").add_context({"amount": 12.5, "currency": "GBP", "reference": "PAY-1"}).success(wait_for=True)
    check("content: valid charge accepted and validation passed",
          ok.status == "success" and ok.step_id and ok.validation is not None and ok.validation.decision == "passed",
          (ok.status, ok.step_id, ok.validation))
    dec["after_charge"] = await decide(t.thread_id, "charge")
    check("decision: after terminal charge can() says thread completed, next() empty",
          dec["after_charge"].get("can") == "denied" and "completed" in dec["after_charge"].get("reason", "")
          and dec["after_charge"].get("next") == [], dec["after_charge"])
    notes["paymentDecisions"] = dec
    arch = await reviewer.get_thread(t.thread_id)
    steps = await arch.steps()
    check("payment: stored thread completed with approval + one charge",
          arch.status == "completed" and sorted(s.step_name for s in steps) == ["approval", "charge"]
          and all(s.retry_count == 0 for s in steps), (arch.status, [(s.step_name, s.retry_count) for s in steps]))
    await reviewer.close()
    await payer.close()


async def shipping():
    carrier = await connect(A, "carrier-service")
    s = await carrier.start("Ship-1", "shipping_confirmation")
    notes["shippingThread"] = s.thread_id
    d = {"start": await decide(s.thread_id, "delivery_confirmed")}
    await s.step("order_shipped").add_context({"tracking_number": "TRK-1"}).success()
    await s.step("order_shipped").add_context({"tracking_number": "TRK-2"}).success()
    d["shipped"] = await decide(s.thread_id, "delivery_confirmed")
    old = await refused(s.step("delivery_confirmed").add_context({"tracking_number": "TRK-1"}).success())
    notes["oldTracking"] = old
    check("cross-step: delivery with the older tracking number refused",
          'content field "tracking_number" violates equals rule: must equal order_shipped.tracking_number'
          in old.get("message", ""), old)
    r = await s.step("delivery_confirmed").add_context({"tracking_number": "TRK-2"}).success()
    check("cross-step: delivery with the latest tracking number accepted", r.status == "success", r)
    d["delivered"] = await decide(s.thread_id, "delivery_confirmed")
    check("decision: can(delivery_confirmed) denied before shipment, allowed after",
          d["start"].get("can") == "denied" and d["shipped"].get("can") == "allowed", d)
    check("decision: after delivery thread completed",
          "completed" in d["delivered"].get("reason", "") and d["delivered"].get("next") == [], d["delivered"])
    notes["shippingDecisions"] = d
    await carrier.close()


async def fresh():
    ops_a = await connect(A, "ops-service")
    ops_b = await connect(B, "ops-service")
    key = f"fresh-{RUN}"
    fa = await ops_a.thread(key, {"contract": "fresh_pay", "role": "ops"})
    fb = await ops_b.thread(key)  # resume the same thread on replica B
    check("fresh: thread(key) on replica B resumes the same thread",
          fb.thread_id == fa.thread_id and fb.contract_name == "fresh_pay", (fa.thread_id, fb.thread_id))
    notes["freshThread"] = fa.thread_id
    d = {"start": await decide(fa.thread_id, "charge")}
    wa = asyncio.ensure_future(fa.wait_for("charge", WaitOptions(timeout=30, invocation_id=f"inv-a-{RUN}")))
    wb = asyncio.ensure_future(fb.wait_for("charge", WaitOptions(timeout=30, invocation_id=f"inv-b-{RUN}")))
    await fa.step("approval").idempotency_key("ap-1").success()
    d["approved1"] = await decide(fa.thread_id, "charge")
    done, pending = await asyncio.wait([wa, wb], return_when=asyncio.FIRST_COMPLETED)
    first = done.pop()
    grant = first.result()
    first_thread, other_task, other_thread = (fa, wb, fb) if first is wa else (fb, wa, fa)
    check("fresh: one approval allows exactly one of two concurrent waits (two replicas)",
          grant.decision == "allowed" and len(done) == 0 and not other_task.done(), (grant, done))
    c1 = await first_thread.step("charge").add_context({"amount": 5}).success(wait_for=True)
    check("fresh: granted charge recorded under its invocation", c1.status == "success" and c1.validation.decision == "passed", c1)
    d["charged1"] = await decide(fa.thread_id, "charge")
    check("fresh: other waiter still pending after first charge", not other_task.done())
    await fa.step("approval").idempotency_key("ap-2").success()
    g2 = await other_task
    check("fresh: second approval allows the second waiter", g2.decision == "allowed", g2)
    c2 = await other_thread.step("charge").add_context({"amount": 6}).success(wait_for=True)
    check("fresh: second charge recorded", c2.status == "success", c2)
    late = await refused(fa.wait_for("charge", WaitOptions(timeout=2, invocation_id=f"inv-c-{RUN}")))
    check("fresh: a third wait without a third approval times out", late.get("sdk_code") == "THREADIFY_WAIT_TIMEOUT", late)
    d["end"] = await decide(fa.thread_id, "charge")
    spent = "its latest success was used"
    # approved1 races the pending waits: the grant consumes the approval as it is recorded.
    check("decision: can(charge) denied before any approval and whenever the approval is spent",
          d["start"].get("can") == "denied" and "missing" in d["start"].get("reason", "")
          and d["approved1"].get("can") in ("denied", "requires_claim")
          and spent in d["charged1"].get("reason", "") and spent in d["end"].get("reason", ""), d)
    await fa.step("approval").idempotency_key("ap-3").success()
    d["approved3"] = await decide(fa.thread_id, "charge")
    check("decision: can(charge) requires_claim after an unused approval; next() offers charge",
          d["approved3"].get("can") == "requires_claim" and "charge" in d["approved3"].get("next", []), d["approved3"])
    c3 = await fa.step("charge").add_context({"amount": 8}).success(wait_for=True)
    check("fresh: an unguarded charge after a third approval passes (and consumes it)",
          c3.validation.decision == "passed", c3)
    d["charged3"] = await decide(fa.thread_id, "charge")
    check("decision: after the unguarded charge the approval is spent", spent in d["charged3"].get("reason", ""), d["charged3"])
    notes["freshDecisions"] = d
    arch = await ops_a.get_thread(fa.thread_id)
    steps = await arch.steps()
    hist: dict = {}
    for s in steps:  # one ArchivedStep per (stepName, idempotencyKey)
        hist[s.step_name] = hist.get(s.step_name, 0) + len(await s.history())
    check("fresh: stored 3 approvals + 3 charges, thread active",
          arch.status == "active" and hist == {"approval": 3, "charge": 3}, (arch.status, hist))
    # An unguarded third charge without a third approval: recorded, judged
    # violated (fresh_dependency_required, critical), which fails the thread
    # (docs/integrators/contracts.md).
    unapproved = await refused(fa.step("charge").add_context({"amount": 9}).success(wait_for=True))
    notes["chargeWithoutFreshApproval"] = unapproved
    arch = await ops_a.get_thread(fa.thread_id)
    check("fresh: a third charge without its own approval is judged violated (thread fails)",
          unapproved.get("sdk_code") == "THREADIFY_VALIDATION_VIOLATED" and arch.status == "failed",
          (unapproved, arch.status))
    await ops_a.close()
    await ops_b.close()


async def reads():
    conn = await connect(A, "reader-service")
    ref = f"R-{RUN}"
    t = await conn.thread(f"big-{RUN}", {"refs": {"batch": ref}})
    for i in range(99):
        await t.step(f"step_{i:03d}").add_context({"i": i}).success()
    # One step identity (same idempotency key) with 120 attempts: failed
    # attempts are retried as new attempts of it.
    for i in range(119):
        await t.step("retry_me").idempotency_key("retry-key").add_context({"attempt": i}).failed()
    await t.step("retry_me").idempotency_key("retry-key").add_context({"attempt": 119}).success()
    for i in range(2):
        await conn.thread(f"small-{RUN}-{i}", {"refs": {"batch": ref}})
    arch = await conn.get_thread(t.thread_id)
    try:
        steps = await arch.steps()
        check("reads: steps() default on a 100-step thread returns 100", len(steps) == 100, len(steps))
    except Exception as e:  # noqa: BLE001
        check("reads: steps() default on a 100-step thread", False, str(e)[:300])
        steps = []
    retry = [s for s in steps if s.step_name == "retry_me"]
    if retry:
        h = await retry[0].history()
        check("reads: history() default limit 100 on a 120-attempt step returns 100", len(h) == 100, len(h))
        try:
            h = await retry[0].history(HistoryQueryOptions(limit=1000))
            check("reads: history(limit=1000) returns all 120", len(h) == 120, len(h))
        except Exception as e:  # noqa: BLE001
            check("reads: history(limit=1000)", False, str(e)[:300])
    threads = await conn.get_threads_by_ref({"batch": ref})
    check("reads: get_threads_by_ref default returns the 3 threads", len(threads) == 3, len(threads))
    try:
        threads = await conn.get_threads_by_ref(RefQuery(ref_key="batch", ref_value=ref, limit=100))
        check("reads: get_threads_by_ref(limit=100)", len(threads) == 3, len(threads))
    except Exception as e:  # noqa: BLE001
        check("reads: get_threads_by_ref(limit=100)", False, str(e)[:300])
    one = await conn.get_thread_by_ref("batch", ref)
    check("reads: get_thread_by_ref", one is not None and one.refs.get("batch") == ref, one and one.refs)
    try:
        full = await arch.get_complete_data()
        check("reads: get_complete_data() default on the 100-step thread",
              len(full.get("steps") or []) == 100, len(full.get("steps") or []))
    except Exception as e:  # noqa: BLE001
        check("reads: get_complete_data() default", False, str(e)[:300])
    try:
        vr = await conn.get_validation_results(t.thread_id)
        check("reads: get_validation_results (free-form thread → empty list)", vr == [], vr)
    except Exception as e:  # noqa: BLE001
        check("reads: get_validation_results", False, str(e)[:300])
    await conn.close()


async def main():
    for part in (payment, shipping, fresh, reads):
        try:
            await part()
        except Exception:  # noqa: BLE001
            failed.append(f"{part.__name__}: exception {traceback.format_exc()[-1500:]}")
    print(json.dumps({"store": STORE, "passed": passed, "failed": failed, "notes": notes}, default=str))


asyncio.run(main())
