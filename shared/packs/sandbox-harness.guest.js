// biome-ignore-all lint/suspicious/noRedundantUseStrict: QuickJS evaluates this file as a global script, not a module: the directive is what makes it strict.
// biome-ignore-all lint/style/useTemplate: a template literal converts with ToString (hint "string"), `+` with ToPrimitive (hint "default"); the harness never coerces guest values in a way it did not choose.
// biome-ignore-all lint/complexity/useArrowFunction: the callbacks and constructors are plain functions on purpose: an arrow has no prototype and no own `arguments`.
// biome-ignore-all lint/correctness/noInnerDeclarations: ES5 `var` in blocks, kept as written and reviewed; hoisting is intended.
// biome-ignore-all lint/correctness/noUnusedVariables: `assert` and `AssertionError` are global lexical bindings for the tests; ignored catch bindings are kept as written.
// biome-ignore-all lint/suspicious/noSelfCompare: `x !== x` is the NaN test that reads no global (Number.isNaN could be replaced by draft code).

// The guest side of the QuickJS sandbox of the `code` pack (shared/packs/sandbox.ts is the host
// side). This file never runs in Node: the host reads it as text (shared/packs/sandbox-harness.ts)
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
  var LOCK = host.mode === host.lock;

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
    INDEX = /^(?:0|[1-9][0-9]*)$/,
    TEST_FRAME = /\(tests\/[0-9]+\.js:/;
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

  // Whether the code that called an assertion is the test's own (its file is tests/<i>.js): an
  // assertion the source makes on its own behalf proves nothing about the source. Native frames
  // (a forEach the test handed `assert` to) are skipped.
  function calledByTest() {
    var stack;
    try {
      var d = getOwnDesc(new ErrorCtor(), "stack");
      stack = d !== undefined ? d.value : undefined;
    } catch (e) {
      return false;
    }
    if (typeof stack !== "string") return false;
    var lines = apply(splitStr, stack, ["\n"]);
    for (var i = 0; i < lines.length; i++) {
      var line = lines[i];
      if (apply(indexOfStr, line, ["redraft-assert.js:"]) >= 0 || apply(indexOfStr, line, ["(native)"]) >= 0)
        continue;
      return apply(regexpExec, TEST_FRAME, [line]) !== null;
    }
    return false;
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
  if (LOCK) {
    lockdown();
  } else {
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
