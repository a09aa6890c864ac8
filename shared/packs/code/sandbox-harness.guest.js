// biome-ignore-all lint/suspicious/noRedundantUseStrict: QuickJS evaluates this file as a global script, not a module: the directive is what makes it strict.
// biome-ignore-all lint/style/useTemplate: a template literal converts with ToString (hint "string"), `+` with ToPrimitive (hint "default"); the harness never coerces guest values in a way it did not choose.
// biome-ignore-all lint/complexity/useArrowFunction: the callbacks and constructors are plain functions on purpose: an arrow has no prototype and no own `arguments`.
// biome-ignore-all lint/correctness/noInnerDeclarations: ES5 `var` in blocks, kept as written and reviewed; hoisting is intended.
// biome-ignore-all lint/correctness/noUnusedVariables: `assert` and `AssertionError` are global lexical bindings for the tests; ignored catch bindings are kept as written.
// biome-ignore-all lint/suspicious/noSelfCompare: `x !== x` is the NaN test that reads no global (Number.isNaN could be replaced by draft code).

// The guest side of the QuickJS sandbox of the `code` pack (shared/packs/code/sandbox.ts is the host
// side). This file never runs in Node: the host reads it as text (shared/packs/code/sandbox-harness.ts)
// and evaluates it as a global script in every fresh QuickJS context, before the draft's source.
// Why it is written the way it is (lexical bindings, captured intrinsics, a locked realm, no
// prototype lookups at call time, read-only protocols) is explained in sandbox-harness.ts: change
// nothing here without reading that, and run tests/packs/code-adversarial.test.ts and
// tests/packs/code-forging.test.ts.
//
// The host hands in, on the global `__redraftHost` (HOST_SLOT), which this script deletes before
// any draft code runs: `record` and `isPromise` (its two functions), the codes of `record` (RECORD),
// the caps on text and on native sorts, and `mode` (MODE: lock the realm for a test, or watch it for
// the probe that names what a source changes). The script's completion value is the host's toolbox.
"use strict";
const {
  assert,
  AssertionError,
  builtins: __redraftBuiltins,
} = (function (G) {
  var host = G.__redraftHost;
  var record = host.record,
    isPromise = host.isPromise;
  var FAILED = host.failed,
    WAITING = host.waiting,
    SETTLED = host.settled,
    COUNTED = host.counted,
    EXPECTED = host.expected;
  var MAX_MESSAGE = host.maxMessageChars,
    MAX_STACK = host.maxStackChars;
  var NATIVE_SORT_MAX = host.nativeSortMax,
    NATIVE_TYPED_SORT_MAX = host.nativeTypedSortMax,
    GENERIC_LENGTH_MAX = host.genericLengthMax;
  var LOCK = host.mode === host.lock,
    TESTS = host.mode === host.tests;

  // Intrinsics, captured before any draft code runs.
  var is = Object.is,
    keys = Object.keys,
    getProto = Object.getPrototypeOf,
    hasOwn = Object.hasOwn;
  var defineProperty = Object.defineProperty,
    getOwnDesc = Object.getOwnPropertyDescriptor,
    getOwnDescs = Object.getOwnPropertyDescriptors;
  var freeze = Object.freeze,
    create = Object.create,
    isExtensible = Object.isExtensible;
  var ownKeys = Reflect.ownKeys,
    isEnumerable = Object.prototype.propertyIsEnumerable;
  var isArray = Array.isArray,
    apply = Reflect.apply,
    stringify = JSON.stringify,
    Str = String,
    indirectEval = G.eval;
  var PromiseCtor = Promise,
    ErrorCtor = Error,
    TypeErrorCtor = TypeError,
    RangeErrorCtor = RangeError;
  var isErrorValue = typeof Error.isError === "function" ? Error.isError : null;
  var ObjectProto = Object.prototype,
    ErrorProto = Error.prototype,
    DateProto = Date.prototype,
    ArrayProto = Array.prototype;
  var RegExpProto = RegExp.prototype,
    MapProto = Map.prototype,
    SetProto = Set.prototype;
  var isProtoOf = ObjectProto.isPrototypeOf,
    getTime = DateProto.getTime,
    toISO = DateProto.toISOString;
  var regexpToString = RegExpProto.toString,
    regexpExec = RegExpProto.exec;
  var symbolToString = Symbol.prototype.toString,
    symbolDescription = getOwnDesc(Symbol.prototype, "description").get,
    sliceStr = Str.prototype.slice,
    splitStr = Str.prototype.split,
    indexOfStr = Str.prototype.indexOf;
  var mapForEach = MapProto.forEach,
    mapHas = MapProto.has,
    mapGet = MapProto.get;
  var mapSize = getOwnDesc(MapProto, "size").get;
  var setForEach = SetProto.forEach,
    setHas = SetProto.has;
  var setSize = getOwnDesc(SetProto, "size").get;
  var numberValueOf = Number.prototype.valueOf,
    stringValueOf = Str.prototype.valueOf,
    booleanValueOf = Boolean.prototype.valueOf,
    bigintValueOf = BigInt.prototype.valueOf,
    symbolValueOf = Symbol.prototype.valueOf;
  var NumberProto = Number.prototype,
    StringProto = Str.prototype,
    BooleanProto = Boolean.prototype,
    BigIntProto = BigInt.prototype,
    SymbolProto = Symbol.prototype;
  var TypedArray = getProto(Int8Array),
    typedArrayLength = getOwnDesc(TypedArray.prototype, "length").get,
    arrayBufferByteLength = getOwnDesc(ArrayBuffer.prototype, "byteLength").get,
    Uint8ArrayCtor = Uint8Array;
  var IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/,
    INDEX = /^(?:0|[1-9][0-9]*)$/;
  var MAX_SHOW = 200,
    MAX_ITEMS = 8,
    MAX_PROTO_DEPTH = 10000,
    MAX_CHANGES = 20;

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
  function accessor(get, set, enumerable) {
    var d = create(null);
    d.get = get;
    d.set = set;
    d.enumerable = enumerable;
    d.configurable = false;
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
      for (var i = 0; i < length && i < MAX_ITEMS; i++)
        out += (i ? ", " : "") + (hasOwn(v, i) ? render(v[i], depth + 1) : "<hole>");
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
    var label = typeof cname === "string" && cname ? cname + " " : proto === null ? "[null prototype] " : "";
    return label + (ks.length ? "{ " + out + " }" : "{}");
  }
  function key(k) {
    if (typeof k === "symbol") return "[" + apply(symbolToString, k, []) + "]";
    return identifier(k) ? k : stringify(k);
  }
  function member(path, k) {
    if (typeof k === "symbol") {
      var d = apply(symbolDescription, k, []);
      return (
        path +
        "[" +
        (typeof d === "string" && apply(indexOfStr, d, ["Symbol."]) === 0
          ? d
          : apply(symbolToString, k, [])) +
        "]"
      );
    }
    if (apply(regexpExec, INDEX, [k]) !== null) return path + "[" + k + "]";
    return path + (identifier(k) ? "." + k : "[" + stringify(k) + "]");
  }

  // ---- deepEqual: own enumerable string and symbol keys, array holes as holes, prototypes ----

  // Where actual and expected first differ: a record without a prototype, or null when equal.
  function at(path, a, e, how) {
    var d = create(null);
    d.path = path;
    d.a = a;
    d.e = e;
    d.how = how || "";
    return d;
  }
  // The own enumerable keys of a value, strings then symbols (Object.keys order); for an array,
  // only the keys that are not indexes (the indexes are compared one by one, holes included).
  function enumerableKeys(v, skipIndexes) {
    var all = ownKeys(v),
      out = [];
    for (var i = 0; i < all.length; i++) {
      var k = all[i];
      if (skipIndexes && typeof k === "string" && apply(regexpExec, INDEX, [k]) !== null) continue;
      if (apply(isEnumerable, v, [k])) out[out.length] = k;
    }
    return out;
  }
  function boxed(v, proto) {
    if (proto === NumberProto) return apply(numberValueOf, v, []);
    if (proto === StringProto) return apply(stringValueOf, v, []);
    if (proto === BooleanProto) return apply(booleanValueOf, v, []);
    if (proto === BigIntProto) return apply(bigintValueOf, v, []);
    return apply(symbolValueOf, v, []);
  }
  function bytesOf(v) {
    return new Uint8ArrayCtor(v, 0, apply(arrayBufferByteLength, v, []));
  }
  function diff(a, e, path, seen) {
    if (is(a, e)) return null;
    if (typeof a !== "object" || typeof e !== "object" || a === null || e === null) {
      // Two functions are equal only when they are the same function.
      return at(path, a, e);
    }
    var proto = getProto(a);
    if (proto !== getProto(e)) return at(path, a, e, "prototype");
    if (isArray(a) !== isArray(e)) return at(path, a, e);
    // seen holds pairs already being compared (cycles); no prototype, so no inherited index setter.
    for (var s = 0; s < seen.count; s++) if (seen[2 * s] === a && seen[2 * s + 1] === e) return null;
    seen[2 * seen.count] = a;
    seen[2 * seen.count + 1] = e;
    seen.count++;
    var found = null;
    if (proto === DateProto) {
      if (!is(apply(getTime, a, []), apply(getTime, e, []))) return at(path, a, e);
    } else if (proto === RegExpProto) {
      if (apply(regexpToString, a, []) !== apply(regexpToString, e, []) || a.lastIndex !== e.lastIndex)
        return at(path, a, e);
    } else if (
      proto === NumberProto ||
      proto === StringProto ||
      proto === BooleanProto ||
      proto === BigIntProto ||
      proto === SymbolProto
    ) {
      if (!is(boxed(a, proto), boxed(e, proto))) return at(path, a, e);
    } else if (proto === ArrayBuffer.prototype) {
      found = diff(bytesOf(a), bytesOf(e), path, seen);
      if (found) return at(path, a, e);
    } else if (isError(a) && (a.name !== e.name || a.message !== e.message)) {
      return at(path, a, e);
    } else if (proto === MapProto) {
      if (apply(mapSize, a, []) !== apply(mapSize, e, []))
        return at(path + ".size", apply(mapSize, a, []), apply(mapSize, e, []));
      apply(mapForEach, a, [
        function (value, k) {
          if (found) return;
          if (apply(mapHas, e, [k])) {
            found = diff(value, apply(mapGet, e, [k]), path + ".get(" + show(k) + ")", seen);
            return;
          }
          // An object key matches an equal key whose value is equal too.
          var match = false;
          if (typeof k === "object" && k !== null) {
            apply(mapForEach, e, [
              function (other, ok) {
                if (
                  !match &&
                  diff(k, ok, path, scratch()) === null &&
                  diff(value, other, path, scratch()) === null
                )
                  match = true;
              },
            ]);
          }
          if (!match) found = at(path, a, e, "key");
        },
      ]);
      if (found) return found;
    } else if (proto === SetProto) {
      if (apply(setSize, a, []) !== apply(setSize, e, []))
        return at(path + ".size", apply(setSize, a, []), apply(setSize, e, []));
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
      if (found) return found;
    } else if (apply(isProtoOf, TypedArray.prototype, [a])) {
      var ta = apply(typedArrayLength, a, []),
        te = apply(typedArrayLength, e, []);
      if (ta !== te) return at(path + ".length", ta, te);
      for (var t = 0; t < ta; t++) if (!is(a[t], e[t])) return at(path + "[" + t + "]", a[t], e[t]);
    } else if (isArray(a)) {
      var la = a.length,
        le = e.length;
      if (la !== le) return at(path + ".length", la, le);
      for (var i = 0; i < la; i++) {
        var ha = hasOwn(a, i),
          he = hasOwn(e, i);
        if (ha !== he) return at(path + "[" + i + "]", a[i], e[i], ha ? "hole expected" : "hole");
        if (!ha) continue;
        found = diff(a[i], e[i], path + "[" + i + "]", seen);
        if (found) return found;
      }
    }
    // Own enumerable properties, symbols included (an array's non-index ones, a Map's own…).
    var indexed = isArray(a) || apply(isProtoOf, TypedArray.prototype, [a]),
      ka = enumerableKeys(a, indexed),
      ke = enumerableKeys(e, indexed);
    for (var j = 0; j < ke.length; j++) {
      var k = ke[j],
        p = member(path, k);
      if (!hasOwn(a, k) || !apply(isEnumerable, a, [k])) return at(p, undefined, e[k], "missing");
      found = diff(a[k], e[k], p, seen);
      if (found) return found;
    }
    for (var m = 0; m < ka.length; m++) {
      if (!hasOwn(e, ka[m]) || !apply(isEnumerable, e, [ka[m]]))
        return at(member(path, ka[m]), a[ka[m]], undefined, "extra");
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
  // Not undefined at first: a thrown `undefined` is no failure the assertion reported.
  var lastThrown = create(null);

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
    if (path && path[0] === ".") path = apply(sliceStr, path, [1]);
    if (d.how === "missing") where = " (missing " + path + ", expected " + show(d.e) + ")";
    else if (d.how === "extra") where = " (unexpected " + path + ": " + show(d.a) + ")";
    else if (d.how === "hole") where = " (" + path + " is a hole, expected " + show(d.e) + ")";
    else if (d.how === "hole expected") where = " (expected a hole at " + path + ", got " + show(d.a) + ")";
    else if (d.how === "prototype")
      where = path ? " (different prototypes at " + path + ")" : " (different prototypes)";
    else if (d.how === "key")
      where = " (a key of " + (path || "the map") + " has no equal key in the expected map)";
    else if (path)
      where = " (first difference at " + path + ": expected " + show(d.e) + ", got " + show(d.a) + ")";
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

  // Whether an assertion counts: the tests' realm holds the only `assert` that does. The source
  // runs in another realm, whose `assert` (for a source that checks itself) records nothing; what it
  // can reach of the tests' realm are copies and callables, never this `assert`.
  function calledByTest() {
    return TESTS;
  }
  // assert.expect(n): the test declares how many assertions it runs (QUnit's name).
  function expect(count) {
    if (typeof count !== "number" || count < 0 || count !== count || count % 1 !== 0)
      failWith("assert.expect takes a whole number of assertions, got " + show(count), {
        operator: "expect",
      });
    if (calledByTest()) record(EXPECTED, count);
  }

  // Anything that escapes an assertion other than its own AssertionError (a comparison that throws,
  // a predicate that throws, a stack overflow) still fails the test.
  // Called directly, not through apply, so that no native frame is left in the test's stack trace.
  function guarded(name, impl) {
    return function (a, b, c) {
      if (calledByTest()) record(COUNTED);
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
    expect: expect,
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

  // ---- the realm: the built-ins, found from the global object ------------------------------

  // The global names of the built-ins, as they are before any draft code runs.
  var globalNames = [];
  var allGlobals = ownKeys(G);
  for (var g = 0; g < allGlobals.length; g++) {
    if (typeof allGlobals[g] === "string" && allGlobals[g] !== "globalThis" && identifier(allGlobals[g]))
      globalNames[globalNames.length] = allGlobals[g];
  }
  var builtins = create(null);
  for (var b = 0; b < globalNames.length; b++) builtins[globalNames[b]] = G[globalNames[b]];
  freeze(builtins);

  // Intrinsics no global name leads to: reached through an instance of what makes them.
  function hiddenIntrinsics() {
    var found = [];
    function add(name, make) {
      try {
        var value = make();
        if (value !== null && (typeof value === "object" || typeof value === "function")) {
          found[found.length] = name;
          found[found.length] = value;
        }
      } catch (e) {}
    }
    add("%GeneratorFunction.prototype%", function () {
      return getProto(function* () {});
    });
    add("%AsyncFunction.prototype%", function () {
      return getProto(async function () {});
    });
    add("%AsyncGeneratorFunction.prototype%", function () {
      return getProto(async function* () {});
    });
    add("%ArrayIteratorPrototype%", function () {
      return getProto([][Symbol.iterator]());
    });
    add("%MapIteratorPrototype%", function () {
      return getProto(new Map()[Symbol.iterator]());
    });
    add("%SetIteratorPrototype%", function () {
      return getProto(new Set()[Symbol.iterator]());
    });
    add("%StringIteratorPrototype%", function () {
      return getProto(""[Symbol.iterator]());
    });
    add("%RegExpStringIteratorPrototype%", function () {
      return getProto(/a/g[Symbol.matchAll](""));
    });
    add("%IteratorHelperPrototype%", function () {
      return getProto([].values().map(noop));
    });
    add("%WrapForValidIteratorPrototype%", function () {
      return getProto(Iterator.from({ next: noop }));
    });
    return found;
  }

  // Every object reachable from the built-ins (own property values, getters, setters and
  // prototypes), breadth first so that each gets its shortest name; names only when `named`
  // (building them is most of the walk's cost, and only the probe reports them).
  function discover(named) {
    var objects = [],
      paths = [],
      seenSet = new WeakSet();
    function visit(value, path) {
      if (value === null || (typeof value !== "object" && typeof value !== "function")) return;
      if (value === G || seenSet.has(value)) return;
      seenSet.add(value);
      objects[objects.length] = value;
      if (named) paths[paths.length] = path;
    }
    for (var n = 0; n < globalNames.length; n++) visit(builtins[globalNames[n]], globalNames[n]);
    // Each constructor's prototype by its usual name (Function.prototype, not the prototype of Error).
    for (var c = 0; named && c < globalNames.length; c++) {
      var ctor = builtins[globalNames[c]];
      if (typeof ctor !== "function") continue;
      var pd = getOwnDesc(ctor, "prototype");
      if (pd !== undefined && hasOwn(pd, "value")) visit(pd.value, globalNames[c] + ".prototype");
    }
    var hidden = hiddenIntrinsics();
    for (var h = 0; h < hidden.length; h += 2) visit(hidden[h + 1], hidden[h]);
    for (var o = 0; o < objects.length; o++) {
      var object = objects[o],
        path = named ? paths[o] : "";
      var all = getOwnDescs(object),
        ks = ownKeys(all);
      for (var k = 0; k < ks.length; k++) {
        var d = all[ks[k]];
        var at = named ? member(path, ks[k]) : "";
        if (hasOwn(d, "value")) visit(d.value, at);
        else {
          visit(d.get, named ? at + " (getter)" : "");
          visit(d.set, named ? at + " (setter)" : "");
        }
      }
      visit(getProto(object), named ? "Object.getPrototypeOf(" + path + ")" : "");
    }
    var out = create(null);
    out.objects = objects;
    out.paths = paths;
    return out;
  }

  // Properties a draft's own objects commonly assign over an inherited built-in (`this.name` in an
  // Error subclass, `Foo.prototype.toString = …`, `Sub.prototype.constructor = Sub`). Frozen, the
  // assignment would fail; as an accessor it defines an own property on the draft's object instead
  // (SES's "override mistake" taming). Assigning it on the built-in itself throws, naming it.
  var ERROR_OVERRIDES = ["constructor", "name", "message", "toString"];
  function overrides() {
    var list = ["Object.prototype", ObjectProto, ownKeys(ObjectProto)];
    list[list.length] = "Function.prototype";
    list[list.length] = Function.prototype;
    list[list.length] = ["constructor", "toString"];
    var errors = [
      "Error",
      "EvalError",
      "RangeError",
      "ReferenceError",
      "SyntaxError",
      "TypeError",
      "URIError",
    ];
    errors[errors.length] = "AggregateError";
    errors[errors.length] = "InternalError";
    for (var e = 0; e < errors.length; e++) {
      var ctor = builtins[errors[e]];
      if (typeof ctor !== "function") continue;
      list[list.length] = errors[e] + ".prototype";
      list[list.length] = ctor.prototype;
      list[list.length] = ERROR_OVERRIDES;
    }
    return list;
  }
  function enableOverride(home, path, k) {
    var d = getOwnDesc(home, k);
    if (d === undefined || !hasOwn(d, "value") || !d.configurable) return;
    var value = d.value,
      named = member(path, k);
    var get = function () {
      return value;
    };
    var set = function (next) {
      if (this === home)
        throw new TypeErrorCtor("the source replaces " + named + "; built-ins are read-only");
      if (this === null || (typeof this !== "object" && typeof this !== "function")) return;
      defineProperty(this, k, desc(next, true, true, true));
    };
    defineProperty(home, k, accessor(get, set, d.enumerable));
  }

  // A sort without a comparator is native code QuickJS cannot interrupt: above a size cap it sorts
  // with the same order through a comparator, whose calls count against the test's budget.
  function defaultOrder(x, y) {
    var sx = `${x}`,
      sy = `${y}`;
    return sx < sy ? -1 : sx > sy ? 1 : 0;
  }
  function numericOrder(x, y) {
    if (x < y) return -1;
    if (x > y) return 1;
    if (x !== x) return y !== y ? 0 : 1;
    if (y !== y) return -1;
    if (x === 0 && y === 0) {
      var nx = 1 / x < 0,
        ny = 1 / y < 0;
      return nx === ny ? 0 : nx ? -1 : 1;
    }
    return 0;
  }
  function arrayLength(o) {
    var n = o.length;
    return typeof n === "number" ? n : 0;
  }
  function capSort(home, k, order, max, typed) {
    var original = home[k];
    if (typeof original !== "function") return;
    var wrapper = {
      [k](compare) {
        if (compare === undefined && this !== null && this !== undefined) {
          var n = typed ? apply(typedArrayLength, this, []) : arrayLength(this);
          if (!typed && !isArray(this) && n > GENERIC_LENGTH_MAX)
            throw new RangeErrorCtor(
              "the sandbox sorts array-likes of at most " + GENERIC_LENGTH_MAX + " elements",
            );
          if (n > max) return apply(original, this, [order]);
        }
        return apply(original, this, [compare]);
      },
    }[k];
    defineProperty(wrapper, "length", desc(1, false, false, true));
    defineProperty(home, k, desc(wrapper, true, false, true));
  }

  // Freezes every object reachable from the built-ins: the walk of `discover`, without names, and
  // with a plain method (no own prototype) frozen on sight instead of queued: it is a leaf, and most
  // of what the walk meets. Freezing one twice does no harm.
  function freezeAll() {
    var queue = [],
      seenSet = new WeakSet(),
      FunctionProto = Function.prototype;
    function reach(value) {
      if (value === null || (typeof value !== "object" && typeof value !== "function") || value === G) return;
      if (typeof value === "function" && value !== FunctionProto && value.prototype === undefined) {
        freeze(value);
        return;
      }
      if (seenSet.has(value)) return;
      seenSet.add(value);
      queue[queue.length] = value;
    }
    for (var n = 0; n < globalNames.length; n++) reach(builtins[globalNames[n]]);
    var hidden = hiddenIntrinsics();
    for (var h = 0; h < hidden.length; h += 2) reach(hidden[h + 1]);
    for (var o = 0; o < queue.length; o++) {
      var object = queue[o],
        all = getOwnDescs(object),
        ks = ownKeys(all);
      for (var k = 0; k < ks.length; k++) {
        var d = all[ks[k]];
        if (d.get === undefined && d.set === undefined) reach(d.value);
        else {
          reach(d.get);
          reach(d.set);
        }
      }
      reach(getProto(object));
      freeze(object);
    }
  }

  function lockdown() {
    capSort(ArrayProto, "sort", defaultOrder, NATIVE_SORT_MAX, false);
    capSort(ArrayProto, "toSorted", defaultOrder, NATIVE_SORT_MAX, false);
    capSort(TypedArray.prototype, "sort", numericOrder, NATIVE_TYPED_SORT_MAX, true);
    capSort(TypedArray.prototype, "toSorted", numericOrder, NATIVE_TYPED_SORT_MAX, true);
    var list = overrides();
    for (var l = 0; l < list.length; l += 3) {
      var ks = list[l + 2];
      for (var k = 0; k < ks.length; k++) enableOverride(list[l + 1], list[l], ks[k]);
    }
    freezeAll();
    freeze(G.console);
    for (var n = 0; n < globalNames.length; n++) {
      var d = getOwnDesc(G, globalNames[n]);
      if (d?.configurable) pin(G, globalNames[n]);
    }
  }

  // ---- watch mode: what the source changed in the built-ins --------------------------------

  function snapshot(found) {
    var shots = [];
    for (var o = 0; o < found.objects.length; o++) {
      var object = found.objects[o],
        shot = create(null);
      shot.proto = getProto(object);
      shot.keys = ownKeys(object);
      shot.descs = [];
      for (var k = 0; k < shot.keys.length; k++) shot.descs[k] = getOwnDesc(object, shot.keys[k]);
      shots[o] = shot;
    }
    return shots;
  }
  function sameDesc(a, b) {
    if (hasOwn(a, "value") !== hasOwn(b, "value")) return false;
    return hasOwn(a, "value") ? is(a.value, b.value) : a.get === b.get && a.set === b.set;
  }
  function changes(found, shots) {
    // JSON text built by hand: the source ran before this, and an array's writes could reach a
    // setter it put on Array.prototype.
    var out = "",
      count = 0;
    function say(what) {
      if (count < MAX_CHANGES)
        out += (count ? "," : "") + stringify("the source " + what + "; built-ins are read-only");
      count++;
    }
    for (var n = 0; n < globalNames.length; n++) {
      var name = globalNames[n],
        now;
      var d = getOwnDesc(G, name);
      if (d === undefined) {
        say("deletes " + name);
        continue;
      }
      try {
        now = indirectEval(name);
      } catch (e) {
        now = d;
      }
      if (!hasOwn(d, "value") || !is(d.value, builtins[name]) || !is(now, builtins[name]))
        say("replaces " + name);
    }
    for (var o = 0; o < found.objects.length; o++) {
      var object = found.objects[o],
        path = found.paths[o],
        shot = shots[o];
      if (getProto(object) !== shot.proto) say("changes the prototype of " + path);
      var seenKeys = create(null);
      for (var k = 0; k < shot.keys.length; k++) {
        var key = shot.keys[k],
          before = shot.descs[k],
          after = getOwnDesc(object, key);
        if (typeof key === "string") seenKeys[key] = true;
        if (after === undefined) say("deletes " + member(path, key));
        else if (!sameDesc(before, after)) say("replaces " + member(path, key));
      }
      var current = ownKeys(object);
      for (var c = 0; c < current.length; c++) {
        var added = current[c];
        if (typeof added === "string" ? seenKeys[added] === true : hasSymbol(shot.keys, added)) continue;
        var ad = getOwnDesc(object, added);
        say(
          (ad !== undefined && !hasOwn(ad, "value") ? "adds a getter or setter " : "adds ") +
            member(path, added),
        );
      }
    }
    return "[" + out + "]";
  }
  function hasSymbol(list, symbol) {
    for (var i = 0; i < list.length; i++) if (list[i] === symbol) return true;
    return false;
  }

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

  // ---- the crossing: values between the draft's realm and the tests' realm, as data ---------
  //
  // The source runs in one QuickJS context (the draft's realm), the test in another (the tests'
  // realm), in one runtime. Nothing passes between them but text the host carries: `pack` turns a
  // value into a tagged JSON tree with the intrinsics captured above, `unpack` rebuilds it with the
  // receiving realm's own constructors. Arrays keep their elements, plain objects their own
  // enumerable data (a getter is read once, here), Map, Set, Date, RegExp, typed arrays, buffers
  // and boxed primitives their contents, errors their name, message and stack text; no prototype,
  // getter, own protocol method (toJSON, toString, valueOf, then…), species or Proxy of the sender
  // survives. A function crosses as a callable: calling it asks the host to run the original in
  // its own realm, with the arguments packed the other way, and its result (or what it threw) is
  // packed back. A promise crosses as a promise of the receiving realm that the host settles when
  // it sees (getPromiseState, never a `then`) the original settle. An object of a class crosses as
  // its own data plus its methods, which run on the original object and refresh the copy after.
  var hostCall = host.call,
    hostGlobal = host.global,
    hostWatch = host.watch,
    hostUncopyable = host.uncopyable;
  var parse = JSON.parse,
    construct = Reflect.construct,
    MapCtor = Map,
    SetCtor = Set,
    DateCtor = Date,
    RegExpCtor = RegExp,
    SymbolCtor = Symbol,
    symbolFor = Symbol.for,
    symbolKeyFor = Symbol.keyFor,
    BigIntCtor = BigInt,
    ObjectCtor = Object,
    ArrayBufferCtor = ArrayBuffer,
    setProto = Object.setPrototypeOf,
    ReferenceErrorCtor = ReferenceError,
    ReferenceErrorProto = ReferenceError.prototype;
  var mapSet = MapProto.set,
    setAdd = SetProto.add,
    WeakMapCtor = WeakMap,
    WeakSetCtor = WeakSet,
    weakMapHas = WeakMap.prototype.has,
    weakSetHas = WeakSet.prototype.has,
    typedTag = getOwnDesc(TypedArray.prototype, Symbol.toStringTag).get,
    regexpSource = getOwnDesc(RegExpProto, "source").get;
  var REGEXP_FLAGS = [
    "d",
    "hasIndices",
    "g",
    "global",
    "i",
    "ignoreCase",
    "m",
    "multiline",
    "s",
    "dotAll",
    "u",
    "unicode",
    "v",
    "unicodeSets",
    "y",
    "sticky",
  ];
  var flagGetters = [];
  for (var fg = 0; fg < REGEXP_FLAGS.length; fg += 2) {
    var fd = getOwnDesc(RegExpProto, REGEXP_FLAGS[fg + 1]);
    if (fd !== undefined && fd.get !== undefined) {
      flagGetters[flagGetters.length] = REGEXP_FLAGS[fg];
      flagGetters[flagGetters.length] = fd.get;
    }
  }
  var TYPED = [
    "Int8Array",
    "Uint8Array",
    "Uint8ClampedArray",
    "Int16Array",
    "Uint16Array",
    "Int32Array",
    "Uint32Array",
    "Float16Array",
    "Float32Array",
    "Float64Array",
    "BigInt64Array",
    "BigUint64Array",
  ];
  var typedCtors = create(null);
  for (var ty = 0; ty < TYPED.length; ty++)
    if (typeof G[TYPED[ty]] === "function") typedCtors[TYPED[ty]] = G[TYPED[ty]];
  var ERRORS = ["Error", "TypeError", "RangeError", "SyntaxError", "ReferenceError", "EvalError", "URIError"];
  var errorCtors = create(null);
  for (var er = 0; er < ERRORS.length; er++) errorCtors[ERRORS[er]] = G[ERRORS[er]];
  // Methods a built-in calls on its own (JSON.stringify, String(x), await, ==): never crossed, so
  // nothing of the sender runs when the receiver's built-ins look at a copy.
  var PROTOCOL = create(null);
  PROTOCOL.constructor = PROTOCOL.toJSON = PROTOCOL.toString = PROTOCOL.valueOf = true;
  PROTOCOL.toLocaleString = true;
  defineProperty(PROTOCOL, "__proto__", desc(true, false, true, false));
  var MAX_PARTS = 1048576,
    MAX_NESTING = 400,
    MAX_LENGTH = 16777216,
    MAX_PROTOS = 32;

  // What this realm lent the other: functions (with the object a method runs on) and promises, by id.
  var lent = [],
    lentIds = new MapCtor(),
    promises = [];
  // What the other realm lent this one: callables by id, promises waiting for the host.
  var borrowed = create(null),
    waiting = create(null),
    methodStubs = new WeakSet();

  // Thrown (by identity) when a value cannot be copied; `refusal` says why.
  var REFUSED = freeze(create(null)),
    refusal = "";
  function refuse(why) {
    refusal = why;
    throw REFUSED;
  }
  function thrownWord(e) {
    if (e === undefined) return "undefined";
    if (e === null) return "null";
    if (typeof e !== "object" && typeof e !== "function") return "a " + typeof e;
    return isError(e) ? "an error" : "a non-error value";
  }
  function lend(fn, self) {
    if (self === undefined) {
      var known = apply(mapGet, lentIds, [fn]);
      if (known !== undefined) return known;
    }
    var id = lent.length,
      entry = create(null);
    entry.fn = fn;
    entry.self = self;
    lent[id] = entry;
    if (self === undefined) apply(mapSet, lentIds, [fn, id]);
    return id;
  }
  function own(o, k) {
    try {
      return getOwnDesc(o, k);
    } catch (e) {
      refuse("looking at its property " + stringify(k) + " threw " + thrownWord(e));
    }
  }
  function fnInfo(fn) {
    var name = "",
      length = 0;
    try {
      var nd = getOwnDesc(fn, "name"),
        ld = getOwnDesc(fn, "length");
      if (nd !== undefined && typeof nd.value === "string") name = clip(nd.value, 100);
      if (ld !== undefined && typeof ld.value === "number") length = ld.value;
    } catch (e) {}
    return [name, length];
  }
  // A value's path, for a refusal's message: built only when needed (most parts are primitives).
  function pathOf(parent, key) {
    if (key === undefined) return parent;
    return typeof key === "number" ? parent + "[" + key + "]" : member(parent, key);
  }
  function valueOfDesc(d, o, parent, key) {
    if (hasOwn(d, "value")) return d.value;
    if (d.get === undefined) return undefined;
    try {
      return apply(d.get, o, []);
    } catch (e) {
      refuse("reading " + pathOf(parent, key) + " threw " + thrownWord(e));
    }
  }
  function packer() {
    var st = create(null);
    st.refs = new MapCtor();
    st.parts = 0;
    return st;
  }
  function attempt(getter, v) {
    try {
      return apply(getter, v, []);
    } catch (e) {
      return REFUSED;
    }
  }
  function enc(v, st, depth, parent, key) {
    if (++st.parts > MAX_PARTS) refuse("it has more than " + MAX_PARTS + " parts");
    switch (typeof v) {
      case "string":
      case "boolean":
        return v;
      case "number":
        if (v !== v) return ["N", "NaN"];
        if (v === 1 / 0) return ["N", "Infinity"];
        if (v === -1 / 0) return ["N", "-Infinity"];
        if (v === 0 && 1 / v < 0) return ["N", "-0"];
        return v;
      case "undefined":
        return ["u"];
      case "bigint":
        return ["I", Str(v)];
      case "symbol": {
        var sk = symbolKeyFor(v),
          sd = apply(symbolDescription, v, []);
        return ["y", sd === undefined ? null : sd, sk === undefined ? null : sk];
      }
      case "function": {
        var info = fnInfo(v);
        return ["F", lend(v, undefined), info[0], info[1]];
      }
    }
    if (v === null) return null;
    var where = pathOf(parent, key);
    if (depth > MAX_NESTING) refuse(where + " is nested more than " + MAX_NESTING + " levels deep");
    var ref = apply(mapGet, st.refs, [v]);
    if (ref !== undefined) return ["r", ref];
    var id = apply(mapSize, st.refs, []);
    apply(mapSet, st.refs, [v, id]);
    var out, i, n;
    if (isPromise(v)) {
      promises[promises.length] = v;
      return ["P", id, promises.length - 1];
    }
    var isArr;
    try {
      isArr = isArray(v);
    } catch (e) {
      refuse(where + " is a revoked proxy");
    }
    if (isArr) {
      var length;
      try {
        length = v.length;
      } catch (e) {
        refuse("reading the length of " + where + " threw " + thrownWord(e));
      }
      if (typeof length !== "number" || length > MAX_LENGTH)
        refuse(where + " is an array of more than " + MAX_LENGTH + " elements");
      out = ["A", id, length];
      var holes = 0;
      for (i = 0; i < length; i++) {
        var has;
        try {
          has = hasOwn(v, i);
        } catch (e) {
          refuse("looking at " + pathOf(where, i) + " threw " + thrownWord(e));
        }
        if (!has) {
          holes++;
          continue;
        }
        if (holes) out[out.length] = ["h", holes];
        holes = 0;
        var item;
        try {
          item = v[i];
        } catch (e) {
          refuse("reading " + pathOf(where, i) + " threw " + thrownWord(e));
        }
        out[out.length] = enc(item, st, depth + 1, where, i);
      }
      if (holes) out[out.length] = ["h", holes];
      // Its other own enumerable properties, as data: an array's own methods never cross.
      out[out.length] = ["k", ownData(v, st, depth, where, true)];
      return out;
    }
    var tag = attempt(typedTag, v);
    if (typeof tag === "string" && typedCtors[tag] !== undefined) {
      n = apply(typedArrayLength, v, []);
      if (n > MAX_LENGTH) refuse(where + " has more than " + MAX_LENGTH + " elements");
      st.parts += n;
      if (st.parts > MAX_PARTS) refuse("it has more than " + MAX_PARTS + " parts");
      out = ["T", id, tag];
      var big = tag === "BigInt64Array" || tag === "BigUint64Array";
      for (i = 0; i < n; i++) out[out.length] = big ? Str(v[i]) : enc(v[i], st, depth + 1, where, i);
      return out;
    }
    n = attempt(arrayBufferByteLength, v);
    if (typeof n === "number") {
      st.parts += n;
      if (st.parts > MAX_PARTS) refuse("it has more than " + MAX_PARTS + " parts");
      var bytes = new Uint8ArrayCtor(v, 0, n);
      out = ["B", id];
      for (i = 0; i < n; i++) out[out.length] = bytes[i];
      return out;
    }
    var time = attempt(getTime, v);
    if (typeof time === "number") return ["D", id, enc(time, st, depth, where)];
    var source = attempt(regexpSource, v);
    if (typeof source === "string" && v !== RegExpProto) {
      var flags = "";
      for (i = 0; i < flagGetters.length; i += 2)
        if (attempt(flagGetters[i + 1], v) === true) flags += flagGetters[i];
      return ["R", id, source, flags];
    }
    if (typeof attempt(mapSize, v) === "number") {
      out = ["M", id];
      apply(mapForEach, v, [
        function (value, k) {
          out[out.length] = enc(k, st, depth + 1, where);
          out[out.length] = enc(value, st, depth + 1, where);
        },
      ]);
      return out;
    }
    if (typeof attempt(setSize, v) === "number") {
      out = ["S", id];
      apply(setForEach, v, [
        function (value) {
          out[out.length] = enc(value, st, depth + 1, where);
        },
      ]);
      return out;
    }
    if (attempt(weakMapHas, v) === false) return ["W", id, "WeakMap"];
    if (attempt(weakSetHas, v) === false) return ["W", id, "WeakSet"];
    var boxes = [numberValueOf, stringValueOf, booleanValueOf, bigintValueOf, symbolValueOf];
    for (i = 0; i < boxes.length; i++) {
      var prim = attempt(boxes[i], v);
      if (prim !== REFUSED && v !== NumberProto && v !== StringProto && v !== BooleanProto)
        return ["X", id, enc(prim, st, depth + 1, where)];
    }
    if (isError(v)) {
      var en = own(v, "name"),
        em = own(v, "message"),
        es = own(v, "stack"),
        name,
        message;
      try {
        name = v.name;
        message = v.message;
      } catch (e) {
        refuse("reading the name or message of " + where + " threw " + thrownWord(e));
      }
      var stack = es !== undefined && typeof es.value === "string" ? clip(es.value, MAX_STACK) : "";
      return [
        "E",
        id,
        typeof name === "string" ? clip(name, 100) : en === undefined ? "Error" : "Error",
        typeof message === "string" ? clip(message, MAX_MESSAGE) : em === undefined ? "" : "",
        stack,
      ];
    }
    var proto;
    try {
      proto = getProto(v);
    } catch (e) {
      refuse("the prototype of " + where + " could not be read");
    }
    var plain = proto === ObjectProto || proto === null;
    out = ["O", id, proto === null ? 0 : 1];
    var methods = [],
      seen = create(null);
    out[3] = ownData(v, st, depth, where, false, seen);
    var ctorId = -1;
    if (!plain) {
      // An object of a class: the methods (and getters, read now) its prototypes give it.
      var p = proto;
      for (var hop = 0; p !== null && p !== ObjectProto && hop < MAX_PROTOS; hop++) {
        var pk;
        try {
          pk = ownKeys(p);
        } catch (e) {
          refuse("listing the prototype of " + where + " threw " + thrownWord(e));
        }
        if (hop === 0) {
          var cd = own(p, "constructor");
          if (cd !== undefined && typeof cd.value === "function") ctorId = lend(cd.value, undefined);
        }
        for (var j = 0; j < pk.length; j++) {
          var mk = pk[j];
          // A class's own methods cross, toString and toJSON included: they are what its tests test.
          if (typeof mk !== "string" || seen[mk] === true || mk === "constructor" || mk === "__proto__")
            continue;
          seen[mk] = true;
          var md = own(p, mk);
          if (md === undefined) continue;
          if (hasOwn(md, "value")) {
            if (typeof md.value !== "function") continue;
            var mi = fnInfo(md.value);
            methods[methods.length] = [mk, lend(md.value, v), mi[0], mi[1]];
          } else if (md.get !== undefined) {
            methods[methods.length] = [mk, enc(valueOfDesc(md, v, where, mk), st, depth + 1, where, mk)];
          }
        }
        try {
          p = getProto(p);
        } catch (e) {
          refuse("the prototype of " + where + " could not be read");
        }
      }
    }
    out[4] = methods;
    out[5] = ctorId;
    return out;
  }

  // Own enumerable properties as [key, value] pairs (a symbol key as a symbol): an array's own
  // functions and a plain object's own protocol methods (toJSON, toString, valueOf…) are left out.
  function ownData(v, st, depth, where, isArr, seen) {
    var data = [],
      ks;
    try {
      ks = ownKeys(v);
    } catch (e) {
      refuse("listing the properties of " + where + " threw " + thrownWord(e));
    }
    for (var i = 0; i < ks.length; i++) {
      var key = ks[i],
        sym = typeof key === "symbol";
      if (isArr && !sym && (key === "length" || apply(regexpExec, INDEX, [key]) !== null)) continue;
      if (seen !== undefined && !sym) seen[key] = true;
      var kd = own(v, key);
      if (kd === undefined || !kd.enumerable) continue;
      var value = valueOfDesc(kd, v, where, key);
      if (typeof value === "function" && (isArr || sym || PROTOCOL[key] === true)) continue;
      data[data.length] = sym ? enc(key, st, depth + 1, where) : key;
      data[data.length] = enc(value, st, depth + 1, where, key);
    }
    return data;
  }
  function dec(n, refs) {
    if (n === null || typeof n !== "object") return n;
    var i, out;
    switch (n[0]) {
      case "u":
        return undefined;
      case "N":
        return n[1] === "NaN" ? 0 / 0 : n[1] === "Infinity" ? 1 / 0 : n[1] === "-Infinity" ? -1 / 0 : -0;
      case "I":
        return BigIntCtor(n[1]);
      case "y":
        return n[2] !== null ? symbolFor(n[2]) : SymbolCtor(n[1] === null ? undefined : n[1]);
      case "F":
        return callable(n[1], n[2], n[3], undefined);
      case "r":
        return refs[n[1]];
      case "P": {
        var settle;
        out = new PromiseCtor(function (resolve, reject) {
          settle = [resolve, reject];
        });
        waiting[n[2]] = settle;
        refs[n[1]] = out;
        hostWatch(n[2]);
        return out;
      }
      case "A": {
        out = [];
        refs[n[1]] = out;
        var at = 0;
        var extra = [];
        for (i = 3; i < n.length; i++) {
          var item = n[i];
          if (item !== null && typeof item === "object" && item[0] === "h") at += item[1];
          else if (item !== null && typeof item === "object" && item[0] === "k") extra = item[1];
          // A fresh array, and no index setter on its prototypes: the tests' realm's own, or frozen.
          else out[at++] = dec(item, refs);
        }
        out.length = n[2];
        putData(out, extra, refs);
        return out;
      }
      case "T": {
        out = new typedCtors[n[2]](n.length - 3);
        refs[n[1]] = out;
        var big = n[2] === "BigInt64Array" || n[2] === "BigUint64Array";
        for (i = 3; i < n.length; i++) out[i - 3] = big ? BigIntCtor(n[i]) : dec(n[i], refs);
        return out;
      }
      case "B": {
        out = new ArrayBufferCtor(n.length - 2);
        refs[n[1]] = out;
        var view = new Uint8ArrayCtor(out);
        for (i = 2; i < n.length; i++) view[i - 2] = n[i];
        return out;
      }
      case "D":
        out = new DateCtor(dec(n[2], refs));
        refs[n[1]] = out;
        return out;
      case "R":
        out = new RegExpCtor(n[2], n[3]);
        refs[n[1]] = out;
        return out;
      case "W":
        out = n[2] === "WeakMap" ? new WeakMapCtor() : new WeakSetCtor();
        refs[n[1]] = out;
        return out;
      case "X":
        out = ObjectCtor(dec(n[2], refs));
        refs[n[1]] = out;
        return out;
      case "M":
        out = new MapCtor();
        refs[n[1]] = out;
        for (i = 2; i < n.length; i += 2) apply(mapSet, out, [dec(n[i], refs), dec(n[i + 1], refs)]);
        return out;
      case "S":
        out = new SetCtor();
        refs[n[1]] = out;
        for (i = 2; i < n.length; i++) apply(setAdd, out, [dec(n[i], refs)]);
        return out;
      case "E": {
        var Ctor = n[2] === "AssertionError" ? AssertionError : errorCtors[n[2]] || ErrorCtor;
        out = new Ctor(n[3]);
        if (out.name !== n[2]) defineProperty(out, "name", desc(n[2], true, false, true));
        defineProperty(out, "stack", desc(n[4], true, false, true));
        refs[n[1]] = out;
        return out;
      }
      case "O": {
        out = n[2] === 0 ? create(null) : {};
        refs[n[1]] = out;
        if (n[5] >= 0) {
          var cls = callable(n[5], "", 0, undefined);
          if (typeof cls.prototype === "object") setProto(out, cls.prototype);
        }
        fill(out, n, refs);
        return out;
      }
    }
    throw new TypeErrorCtor("the sandbox could not read a copied value");
  }
  function putData(out, data, refs) {
    for (var i = 0; i < data.length; i += 2)
      defineProperty(out, dec(data[i], refs), desc(dec(data[i + 1], refs), true, true, true));
  }
  function fill(out, n, refs) {
    var data = n[3],
      methods = n[4],
      i;
    putData(out, data, refs);
    for (i = 0; i < methods.length; i++) {
      var m = methods[i],
        value = m.length === 4 ? callable(m[1], m[2], m[3], out) : dec(m[1], refs);
      defineProperty(out, m[0], desc(value, true, false, true));
    }
  }
  // After a method ran on the original object, the copy takes the object's data as it is now.
  function refresh(target, n) {
    if (n === null || typeof n !== "object" || n[0] !== "O") return;
    var ks = ownKeys(target);
    for (var i = 0; i < ks.length; i++) {
      var d = getOwnDesc(target, ks[i]);
      if (d?.configurable && !(hasOwn(d, "value") && methodStubs.has(d.value))) delete target[ks[i]];
    }
    var data = n[3],
      methods = n[4],
      refs = [];
    refs[n[1]] = target;
    putData(target, data, refs);
    for (var k = 0; k < methods.length; k++)
      if (methods[k].length === 2)
        defineProperty(target, methods[k][0], desc(dec(methods[k][1], refs), true, false, true));
  }
  function unpackText(text) {
    return dec(parse(text), []);
  }
  function packText(value, what) {
    try {
      return stringify(enc(value, packer(), 0, what));
    } catch (e) {
      if (e !== REFUSED)
        refusal = isError(e) ? "copying it failed (" + thrownWord(e) + ")" : "copying it failed";
      var message = what + " cannot be copied between the source and the tests: " + refusal;
      hostUncopyable(message);
      throw new TypeErrorCtor(message);
    }
  }
  // The answer to a call: [0, value] returned, [1, value] thrown, [2, why] not copyable; with, for a
  // method, the object it ran on as it is now.
  function answerText(tag, value, self, what) {
    try {
      var out = [tag, enc(value, packer(), 0, what)];
      if (self !== undefined && self !== null && typeof self === "object")
        out[2] = enc(self, packer(), 0, "the object its method ran on");
      return stringify(out);
    } catch (e) {
      if (e !== REFUSED) refusal = "copying it failed (" + thrownWord(e) + ")";
      var message = what + " cannot be copied into the tests: " + refusal;
      // A throw stays a throw: the tests get a TypeError saying why (no assertion matches it by accident).
      if (tag === 1) return stringify([1, ["E", 0, "TypeError", message, ""]]);
      hostUncopyable(message);
      return stringify([2, message]);
    }
  }
  function answer(text, owner) {
    var r = parse(text);
    if (owner !== undefined && r.length > 2) refresh(owner, r[2]);
    if (r[0] === 0) return dec(r[1], []);
    if (r[0] === 1) throw dec(r[1], []);
    throw new TypeErrorCtor(r[1]);
  }
  function callable(id, name, length, owner) {
    if (owner === undefined && borrowed[id] !== undefined) return borrowed[id];
    var stub = function (...args) {
      var text = hostCall(id, packText(args, "an argument"), new.target !== undefined);
      return answer(text, owner);
    };
    defineProperty(stub, "name", desc(name, false, false, true));
    defineProperty(stub, "length", desc(length, false, false, true));
    if (owner === undefined) borrowed[id] = stub;
    else methodStubs.add(stub);
    return stub;
  }
  // The host runs a lent function for the other realm: arguments in, answer out, as text.
  function invoke(id, argsText, isNew) {
    var entry = lent[id];
    if (entry === undefined) return stringify([2, "the sandbox lost a function"]);
    var args = unpackText(argsText),
      result,
      threw = false;
    try {
      result = isNew ? construct(entry.fn, args) : apply(entry.fn, entry.self, args);
    } catch (e) {
      threw = true;
      result = e;
    }
    var name = fnInfo(entry.fn)[0] || "a function";
    return answerText(
      threw ? 1 : 0,
      result,
      entry.self,
      (threw ? "the value " : "the value ") + name + "() " + (threw ? "threw" : "returned"),
    );
  }
  // A global of the source's, by name: [3] when it has none.
  var readers = create(null);
  function reader(name) {
    var read = readers[name];
    if (read === undefined) {
      try {
        read = indirectEval("(function () { return " + name + "; })");
      } catch (e) {
        read = null;
      }
      readers[name] = read;
    }
    return read;
  }
  function lookup(name) {
    var read = reader(name);
    if (read === null) return stringify([3]);
    var value;
    try {
      value = read();
    } catch (e) {
      if (apply(isProtoOf, ReferenceErrorProto, [e])) return stringify([3]);
      return answerText(1, e, undefined, "reading " + name);
    }
    return answerText(0, value, undefined, "the value of " + name);
  }
  function present(name) {
    var read = reader(name);
    if (read === null) return false;
    try {
      read();
      return true;
    } catch (e) {
      return !apply(isProtoOf, ReferenceErrorProto, [e]);
    }
  }
  // In the tests' realm: the source's global `name`, read through the host at each use.
  function bind(name) {
    if (hasOwn(G, name) || name === "assert" || name === "AssertionError") return;
    defineProperty(
      G,
      name,
      binding(
        function () {
          var r = parse(hostGlobal(name));
          if (r[0] === 3) throw new ReferenceErrorCtor(name + " is not defined");
          return answer(stringify(r), undefined);
        },
        function (value) {
          defineProperty(G, name, desc(value, true, true, true));
        },
      ),
    );
  }
  function binding(get, set) {
    var d = create(null);
    d.get = get;
    d.set = set;
    d.enumerable = false;
    d.configurable = true;
    return d;
  }
  function settlePromise(id, text) {
    var settle = waiting[id];
    if (settle === undefined) return;
    delete waiting[id];
    var r = parse(text);
    if (r[0] === 0) settle[0](dec(r[1], []));
    else settle[1](r[0] === 1 ? dec(r[1], []) : new TypeErrorCtor(r[1]));
  }
  function promiseOf(id) {
    return promises[id];
  }
  function settledText(ok, value) {
    return answerText(
      ok ? 0 : 1,
      value,
      undefined,
      ok ? "the value a promise resolved to" : "the value a promise rejected with",
    );
  }

  // The test's code runs inside a block that binds every built-in's global name to the value
  // captured here: what a test calls is the built-in, whatever the global object holds by then.
  var prelude = "";
  for (var p = 0; p < globalNames.length; p++)
    prelude += (p ? "," : "const ") + globalNames[p] + "=__redraftBuiltins." + globalNames[p];
  prelude += ";";

  var toolbox = create(null);
  toolbox.describe = describe;
  toolbox.thenable = thenable;
  toolbox.prelude = prelude;
  toolbox.invoke = invoke;
  toolbox.lookup = lookup;
  toolbox.present = present;
  toolbox.bind = bind;
  toolbox.settle = settlePromise;
  toolbox.promiseOf = promiseOf;
  toolbox.settled = settledText;
  if (LOCK) {
    lockdown();
  } else if (!TESTS) {
    var found = discover(true),
      shots = snapshot(found);
    toolbox.changes = function () {
      return changes(found, shots);
    };
  }
  defineProperty(G, "__redraftHost", desc(freeze(toolbox), false, false, true));
  var exported = create(null);
  exported.assert = assert;
  exported.AssertionError = AssertionError;
  exported.builtins = builtins;
  return exported;
})(globalThis);
(function (G) {
  var toolbox = G.__redraftHost;
  delete G.__redraftHost;
  return toolbox;
})(globalThis);
