// biome-ignore-all lint/suspicious/noRedundantUseStrict: QuickJS evaluates this file as a global script, not a module: the directive is what makes it strict.
// biome-ignore-all lint/style/useTemplate: a template literal converts with ToString (hint "string"), `+` with ToPrimitive (hint "default"); the harness never coerces guest values in a way it did not choose.
// biome-ignore-all lint/complexity/useArrowFunction: the callbacks and constructors are plain functions on purpose (an arrow has no prototype and no own `arguments`), as when the harness was written.
// biome-ignore-all lint/correctness/noInnerDeclarations: ES5 `var` in blocks, kept as written and reviewed; hoisting is intended.
// biome-ignore-all lint/correctness/noUnusedVariables: `assert` and `AssertionError` are global lexical bindings for the tests; ignored catch bindings are kept as written.
// biome-ignore-all lint/suspicious/noSelfCompare: `x !== x` is the NaN test that reads no global (Number.isNaN could be replaced by draft code).

// The guest side of the QuickJS sandbox of the `code` pack (shared/packs/sandbox.ts is the host
// side). This file never runs in Node: the host reads it as text (shared/packs/sandbox-harness.ts)
// and evaluates it as a global script in every fresh QuickJS context, before the draft's source.
// Why it is written the way it is (lexical bindings, captured intrinsics, no prototype lookups at
// call time, read-only protocols) is explained in sandbox-harness.ts: change nothing here without
// reading that, and run tests/packs/code-adversarial.test.ts.
//
// The host hands in, on the global `__redraftHost` (HOST_SLOT), which this script deletes before
// any draft code runs: `record` and `isPromise` (its two functions), the codes `failed`, `waiting`
// and `settled` of `record` (RECORD), and the caps `maxMessageChars` and `maxStackChars`. The
// script's completion value is the host's toolbox: `describe` and `thenable`.
"use strict";
const assert = (function (G) {
    var host = G.__redraftHost;
    var record = host.record,
      isPromise = host.isPromise;
    var FAILED = host.failed,
      WAITING = host.waiting,
      SETTLED = host.settled;
    var MAX_MESSAGE = host.maxMessageChars,
      MAX_STACK = host.maxStackChars;

    // Intrinsics, captured before any draft code runs.
    var is = Object.is,
      keys = Object.keys,
      getProto = Object.getPrototypeOf,
      hasOwn = Object.hasOwn;
    var defineProperty = Object.defineProperty,
      getOwnDesc = Object.getOwnPropertyDescriptor;
    var freeze = Object.freeze,
      create = Object.create;
    var isArray = Array.isArray,
      apply = Reflect.apply,
      stringify = JSON.stringify,
      Str = String;
    var PromiseCtor = Promise,
      ErrorCtor = Error;
    var isErrorValue = typeof Error.isError === "function" ? Error.isError : null;
    var ObjectProto = Object.prototype,
      ErrorProto = Error.prototype,
      DateProto = Date.prototype;
    var RegExpProto = RegExp.prototype,
      MapProto = Map.prototype,
      SetProto = Set.prototype;
    var isProtoOf = ObjectProto.isPrototypeOf,
      getTime = DateProto.getTime,
      toISO = DateProto.toISOString;
    var regexpToString = RegExpProto.toString,
      regexpExec = RegExpProto.exec;
    var symbolToString = Symbol.prototype.toString,
      sliceStr = Str.prototype.slice;
    var mapForEach = MapProto.forEach,
      mapHas = MapProto.has,
      mapGet = MapProto.get;
    var mapSize = getOwnDesc(MapProto, "size").get;
    var setForEach = SetProto.forEach,
      setHas = SetProto.has;
    var setSize = getOwnDesc(SetProto, "size").get;
    var IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
    var MAX_SHOW = 200,
      MAX_ITEMS = 8,
      MAX_PROTO_DEPTH = 10000;

    delete G.__redraftHost;

    // A property descriptor without a prototype: Object.prototype.get or .value cannot leak into it.
    function desc(value, writable, enumerable, configurable) {
      var d = create(null);
      d.value = value;
      d.writable = writable;
      d.enumerable = enumerable;
      d.configurable = configurable;
      return d;
    }
    // Makes a data or accessor property read-only and permanent, keeping its value.
    function pin(object, key) {
      var d = create(null),
        current = getOwnDesc(object, key);
      if (current === undefined) return;
      if (hasOwn(current, "value")) d.writable = false;
      d.configurable = false;
      defineProperty(object, key, d);
    }
    pin(PromiseCtor.prototype, "then");
    pin(PromiseCtor.prototype, "constructor");
    pin(PromiseCtor, Symbol.species);
    pin(Array.prototype, Symbol.iterator);
    pin(getProto([][Symbol.iterator]()), "next");

    function clip(text, max) {
      return text.length > max ? apply(sliceStr, text, [0, max - 1]) + "\u2026" : text;
    }
    function isError(v) {
      if (isErrorValue !== null) return apply(isErrorValue, undefined, [v]);
      return apply(isProtoOf, ErrorProto, [v]);
    }
    function isErrorProto(p) {
      return p === ErrorProto || apply(isProtoOf, ErrorProto, [p]);
    }
    function identifier(k) {
      return apply(regexpExec, IDENT, [k]) !== null;
    }

    function show(v, depth) {
      try {
        return clip(render(v, depth || 0), MAX_SHOW);
      } catch (e) {
        return "[unprintable value]";
      }
    }
    function render(v, depth) {
      switch (typeof v) {
        case "string":
          return stringify(v);
        case "number":
          return is(v, -0) ? "-0" : Str(v);
        case "bigint":
          return Str(v) + "n";
        case "boolean":
          return v ? "true" : "false";
        case "undefined":
          return "undefined";
        case "symbol":
          return apply(symbolToString, v, []);
        case "function": {
          var fname = v.name;
          return "[Function " + (typeof fname === "string" && fname ? fname : "anonymous") + "]";
        }
      }
      if (v === null) return "null";
      var proto = getProto(v);
      if (proto === DateProto) {
        var t = apply(getTime, v, []);
        return t === t ? "Date(" + apply(toISO, v, []) + ")" : "Date(Invalid)";
      }
      if (proto === RegExpProto) return apply(regexpToString, v, []);
      if (isError(v)) {
        var en = v.name,
          em = v.message;
        return (typeof en === "string" ? en : "Error") + ": " + (typeof em === "string" ? em : "");
      }
      if (depth > 2) return isArray(v) ? "[\u2026]" : "{\u2026}";
      var out = "",
        n = 0;
      if (proto === MapProto) {
        apply(mapForEach, v, [
          function (value, key) {
            if (n < MAX_ITEMS)
              out += (n ? ", " : "") + render(key, depth + 1) + " => " + render(value, depth + 1);
            n++;
          },
        ]);
        return "Map(" + n + ") {" + (n ? " " + out + (n > MAX_ITEMS ? ", \u2026" : "") + " " : "") + "}";
      }
      if (proto === SetProto) {
        apply(setForEach, v, [
          function (value) {
            if (n < MAX_ITEMS) out += (n ? ", " : "") + render(value, depth + 1);
            n++;
          },
        ]);
        return "Set(" + n + ") {" + (n ? " " + out + (n > MAX_ITEMS ? ", \u2026" : "") + " " : "") + "}";
      }
      if (isArray(v)) {
        var length = v.length;
        if (typeof length !== "number") return "[\u2026]";
        for (var i = 0; i < length && i < MAX_ITEMS; i++) out += (i ? ", " : "") + render(v[i], depth + 1);
        if (length > MAX_ITEMS) out += ", \u2026 " + (length - MAX_ITEMS) + " more";
        return "[" + out + "]";
      }
      var ks = keys(v);
      for (var j = 0; j < ks.length && j < MAX_ITEMS; j++) {
        out += (j ? ", " : "") + key(ks[j]) + ": " + render(v[ks[j]], depth + 1);
      }
      if (ks.length > MAX_ITEMS) out += ", \u2026";
      var ctor = proto !== ObjectProto && proto !== null && proto.constructor;
      var cname = typeof ctor === "function" ? ctor.name : undefined;
      var label = typeof cname === "string" && cname ? cname + " " : "";
      return label + (ks.length ? "{ " + out + " }" : "{}");
    }
    function key(k) {
      return identifier(k) ? k : stringify(k);
    }
    function member(path, k) {
      return path + (identifier(k) ? "." + k : "[" + stringify(k) + "]");
    }

    // Where actual and expected first differ: a record without a prototype, or null when equal.
    function at(path, a, e, how) {
      var d = create(null);
      d.path = path;
      d.a = a;
      d.e = e;
      d.how = how || "";
      return d;
    }
    function diff(a, e, path, seen) {
      if (is(a, e)) return null;
      if (typeof a !== "object" || typeof e !== "object" || a === null || e === null) return at(path, a, e);
      var proto = getProto(a);
      if (proto !== getProto(e)) return at(path, a, e);
      // seen holds pairs already being compared (cycles); no prototype, so no inherited index setter.
      for (var s = 0; s < seen.count; s++) if (seen[2 * s] === a && seen[2 * s + 1] === e) return null;
      seen[2 * seen.count] = a;
      seen[2 * seen.count + 1] = e;
      seen.count++;
      if (proto === DateProto)
        return is(apply(getTime, a, []), apply(getTime, e, [])) ? null : at(path, a, e);
      if (proto === RegExpProto)
        return apply(regexpToString, a, []) === apply(regexpToString, e, []) ? null : at(path, a, e);
      if (isError(a) && (a.name !== e.name || a.message !== e.message)) return at(path, a, e);
      var found = null;
      if (proto === MapProto) {
        if (apply(mapSize, a, []) !== apply(mapSize, e, [])) return at(path, a, e);
        apply(mapForEach, a, [
          function (value, k) {
            if (found) return;
            if (!apply(mapHas, e, [k])) found = at(path, a, e);
            else found = diff(value, apply(mapGet, e, [k]), path + ".get(" + show(k) + ")", seen);
          },
        ]);
        return found;
      }
      if (proto === SetProto) {
        if (apply(setSize, a, []) !== apply(setSize, e, [])) return at(path, a, e);
        apply(setForEach, a, [
          function (value) {
            if (found || apply(setHas, e, [value])) return;
            var match = false;
            if (typeof value === "object" && value !== null) {
              apply(setForEach, e, [
                function (other) {
                  if (!match && diff(value, other, path, scratch()) === null) match = true;
                },
              ]);
            }
            if (!match) found = at(path, a, e);
          },
        ]);
        return found;
      }
      if (isArray(a)) {
        var la = a.length,
          le = e.length;
        if (la !== le) return at(path + ".length", la, le);
        for (var i = 0; i < la; i++) {
          found = diff(a[i], e[i], path + "[" + i + "]", seen);
          if (found) return found;
        }
        return null;
      }
      var ka = keys(a),
        ke = keys(e);
      for (var j = 0; j < ke.length; j++) {
        var k = ke[j],
          p = member(path, k);
        if (!hasOwn(a, k)) return at(p, undefined, e[k], "missing");
        found = diff(a[k], e[k], p, seen);
        if (found) return found;
      }
      for (var m = 0; m < ka.length; m++) {
        if (!hasOwn(e, ka[m])) return at(member(path, ka[m]), a[ka[m]], undefined, "extra");
      }
      return null;
    }
    function scratch() {
      var o = create(null);
      o.count = 0;
      return o;
    }

    var DETAILS = freeze(["actual", "expected", "operator"]);
    class AssertionError extends ErrorCtor {
      constructor(message, details) {
        super(message);
        if (details !== null && typeof details === "object") {
          for (var i = 0; i < DETAILS.length; i++) {
            if (hasOwn(details, DETAILS[i]))
              defineProperty(this, DETAILS[i], desc(details[DETAILS[i]], true, true, true));
          }
        }
      }
    }
    defineProperty(AssertionError.prototype, "name", desc("AssertionError", true, false, true));

    // The error the last failure threw: an assertion that sees it escaping has reported it already.
    var lastThrown;

    function text(message) {
      try {
        return Str(message);
      } catch (e) {
        return "[unprintable message]";
      }
    }
    // Records the failure with the host first, then throws: catching the error does not undo it.
    function fail(message, detail, details) {
      var said = message === undefined ? detail : text(message) + ": " + detail;
      failWith(said, details);
    }
    function failWith(said, details) {
      var error,
        stack = "";
      said = clip(said, MAX_MESSAGE);
      try {
        error = new AssertionError(said, details);
        var d = getOwnDesc(error, "stack");
        if (d !== undefined && typeof d.value === "string") stack = d.value;
      } catch (e) {
        error = e;
      }
      record(FAILED, said, clip(stack, MAX_STACK));
      lastThrown = error;
      throw error;
    }
    function expectedGot(actual, expected) {
      return "expected " + show(expected) + ", got " + show(actual);
    }
    function sameValue(a, e) {
      return a === e || (a !== a && e !== e);
    }

    function ok(value, message) {
      if (!value)
        failWith(message === undefined ? "expected a truthy value, got " + show(value) : text(message), {
          actual: value,
          expected: true,
          operator: "ok",
        });
    }
    function equal(actual, expected, message) {
      if (!sameValue(actual, expected))
        fail(message, expectedGot(actual, expected), { actual: actual, expected: expected, operator: "===" });
    }
    function notEqual(actual, expected, message) {
      if (sameValue(actual, expected))
        fail(message, "expected a value other than " + show(expected), {
          actual: actual,
          expected: expected,
          operator: "!==",
        });
    }
    function deepEqual(actual, expected, message) {
      var d = diff(actual, expected, "", scratch());
      if (d === null) return;
      var where = "",
        path = d.path;
      if (path) {
        if (path[0] === ".") path = apply(sliceStr, path, [1]);
        where =
          d.how === "missing"
            ? " (missing " + path + ", expected " + show(d.e) + ")"
            : d.how === "extra"
              ? " (unexpected " + path + ": " + show(d.a) + ")"
              : " (first difference at " + path + ": expected " + show(d.e) + ", got " + show(d.a) + ")";
      }
      fail(message, expectedGot(actual, expected) + where, {
        actual: actual,
        expected: expected,
        operator: "deepEqual",
      });
    }
    function notDeepEqual(actual, expected, message) {
      if (diff(actual, expected, "", scratch()) === null)
        fail(message, "expected a value not deeply equal to " + show(expected), {
          actual: actual,
          expected: expected,
          operator: "notDeepEqual",
        });
    }

    // instanceof without Symbol.hasInstance: a walk up the prototype chain.
    function inherits(value, proto) {
      if (value === null || (typeof value !== "object" && typeof value !== "function")) return false;
      var p = getProto(value);
      for (var n = 0; p !== null && n < MAX_PROTO_DEPTH; n++) {
        if (p === proto) return true;
        p = getProto(p);
      }
      return false;
    }
    function matches(error, expected) {
      if (expected === undefined) return true;
      if (getProto(expected) === RegExpProto) {
        var message = error !== null && typeof error === "object" ? error.message : undefined;
        return apply(regexpExec, expected, [typeof message === "string" ? message : text(error)]) !== null;
      }
      if (typeof expected === "function") {
        var proto = expected.prototype;
        if (typeof proto === "object" && proto !== null) {
          // An error class matches genuine errors only: an object merely claiming its prototype is no error.
          if (inherits(error, proto)) return !isErrorProto(proto) || isError(error);
          if (isErrorProto(proto)) return false;
        }
        return expected(error) === true;
      }
      return false;
    }
    // assert.throws(fn), assert.throws(fn, message), assert.throws(fn, ErrorClass | /regexp/ | predicate, message?)
    function throws(fn, expected, message) {
      if (typeof expected === "string" && message === undefined) {
        message = expected;
        expected = undefined;
      }
      if (typeof fn !== "function")
        failWith("assert.throws expects a function, got " + show(fn), { actual: fn, operator: "throws" });
      var threw = false,
        error;
      try {
        fn();
      } catch (e) {
        threw = true;
        error = e;
      }
      if (!threw)
        fail(message, "expected the function to throw, but it returned normally", { operator: "throws" });
      if (!matches(error, expected))
        fail(message, "the function threw " + show(error) + ", which does not match " + show(expected), {
          actual: error,
          expected: expected,
          operator: "throws",
        });
    }
    function doesNotThrow(fn, message) {
      try {
        fn();
      } catch (e) {
        fail(message, "expected the function not to throw, but it threw " + show(e), {
          actual: e,
          operator: "doesNotThrow",
        });
      }
    }
    // Waits for a genuine promise only, without calling any then the draft could have replaced.
    function rejects(promiseOrFn, expected, message) {
      if (typeof expected === "string" && message === undefined) {
        message = expected;
        expected = undefined;
      }
      var target,
        threw = false,
        thrown;
      try {
        target = typeof promiseOrFn === "function" ? promiseOrFn() : promiseOrFn;
      } catch (e) {
        threw = true;
        thrown = e;
      }
      if (threw) {
        // A function that throws instead of returning a promise counts as rejecting, as in Node.
        if (!matches(thrown, expected))
          fail(message, "the function threw " + show(thrown) + ", which does not match " + show(expected), {
            actual: thrown,
            expected: expected,
            operator: "rejects",
          });
        return new PromiseCtor(function (resolve) {
          resolve(undefined);
        });
      }
      if (!isPromise(target))
        fail(message, "assert.rejects expects a Promise (or a function returning one), got " + show(target), {
          actual: target,
          operator: "rejects",
        });
      try {
        defineProperty(target, "constructor", desc(PromiseCtor, true, false, true));
      } catch (e) {
        fail(message, "the promise cannot be observed (it is frozen or has a fixed constructor)", {
          actual: target,
          operator: "rejects",
        });
      }
      record(WAITING);
      return (async function () {
        var rejected = false,
          error;
        try {
          await target;
        } catch (e) {
          rejected = true;
          error = e;
        }
        record(SETTLED);
        if (!rejected)
          fail(message, "expected the promise to reject, but it resolved", { operator: "rejects" });
        if (!matches(error, expected))
          fail(
            message,
            "the promise rejected with " + show(error) + ", which does not match " + show(expected),
            { actual: error, expected: expected, operator: "rejects" },
          );
      })();
    }
    function failNow(message) {
      failWith(message === undefined ? "failed" : text(message), { operator: "fail" });
    }

    // Anything that escapes an assertion other than its own AssertionError (a comparison that throws,
    // a predicate that throws, a stack overflow) still fails the test.
    // Called directly, not through apply, so that no native frame is left in the test's stack trace.
    function guarded(name, impl) {
      return function (a, b, c) {
        try {
          return impl(a, b, c);
        } catch (e) {
          if (e !== lastThrown) {
            var what = "[a thrown value]";
            try {
              what = isError(e) ? show(e) : "a thrown " + typeof e;
            } catch (ignored) {}
            record(FAILED, "assert." + name + " could not complete: " + what, "");
          }
          throw e;
        }
      };
    }

    var assert = guarded("ok", ok);
    var methods = {
      ok: assert,
      equal: guarded("equal", equal),
      notEqual: guarded("notEqual", notEqual),
      deepEqual: guarded("deepEqual", deepEqual),
      notDeepEqual: guarded("notDeepEqual", notDeepEqual),
      throws: guarded("throws", throws),
      doesNotThrow: guarded("doesNotThrow", doesNotThrow),
      rejects: guarded("rejects", rejects),
      fail: guarded("fail", failNow),
    };
    methods.strictEqual = methods.equal;
    methods.notStrictEqual = methods.notEqual;
    methods.deepStrictEqual = methods.deepEqual;
    methods.notDeepStrictEqual = methods.notDeepEqual;
    methods.AssertionError = AssertionError;
    var names = keys(methods);
    for (var i = 0; i < names.length; i++)
      defineProperty(assert, names[i], desc(methods[names[i]], false, true, false));
    freeze(assert);
    freeze(AssertionError.prototype);
    freeze(AssertionError);
    var noop = function () {};
    G.console = {
      log: noop,
      info: noop,
      warn: noop,
      error: noop,
      debug: noop,
      trace: noop,
      dir: noop,
      table: noop,
    };

    function describe(thrown) {
      var out = create(null);
      out.isError = false;
      out.name = "";
      out.message = "";
      out.stack = "";
      out.isNull = thrown === null;
      try {
        if (thrown !== null && (typeof thrown === "object" || typeof thrown === "function")) {
          var name, message, stack;
          try {
            name = thrown.name;
          } catch (e) {}
          try {
            message = thrown.message;
          } catch (e) {}
          try {
            stack = thrown.stack;
          } catch (e) {}
          out.isError = isError(thrown) || typeof message === "string";
          if (out.isError) {
            out.name = typeof name === "string" ? clip(name, 100) : "Error";
            out.message = typeof message === "string" ? clip(message, MAX_MESSAGE) : "";
            out.stack = typeof stack === "string" ? clip(stack, MAX_STACK) : "";
            return stringify(out);
          }
        }
        out.message = show(thrown);
      } catch (e) {}
      return stringify(out);
    }
    function thenable(value) {
      try {
        return typeof value.then === "function";
      } catch (e) {
        return true;
      }
    }
    var toolbox = create(null);
    toolbox.describe = describe;
    toolbox.thenable = thenable;
    defineProperty(G, "__redraftHost", desc(freeze(toolbox), false, false, true));
    return assert;
  })(globalThis),
  AssertionError = assert.AssertionError;
(function (G) {
  var toolbox = G.__redraftHost;
  delete G.__redraftHost;
  return toolbox;
})(globalThis);
