// gwb's stand-in for the d3-jetpack that circuit-tracer's front end loads from its authors' site
// (static_js/lib/jetpack_2024-07-20.js, a fork of Gregor Aisch's d3-jetpack, BSD-3), which is in no
// package registry. tests/python/test_saelens_circuit_tracer_browser.py serves it in that file's
// place, after d3 v7. Written for this test from d3-jetpack's documented API, only what the front
// end (circuit_tracer/frontend/assets) calls: append/insert/selectAppend with "tag.class#id" names,
// appendMany, at, st, translate, parent, and d3.nestBy, d3.clamp, d3.conventions, d3.attachTooltip.
(function () {
  'use strict'
  var proto = d3.selection.prototype

  // "div.a.b#c" -> {tag: "div", classes: ["a", "b"], id: "c"}
  function parseName(name) {
    var parts = name.split(/(?=[.#])/)
    var parsed = {tag: parts[0], classes: [], id: null}
    parts.slice(1).forEach(function (p) {
      if (p[0] == '.') parsed.classes.push(p.slice(1))
      else parsed.id = p.slice(1)
    })
    return parsed
  }

  function decorate(sel, parsed) {
    if (parsed.classes.length) sel.attr('class', parsed.classes.join(' '))
    if (parsed.id) sel.attr('id', parsed.id)
    return sel
  }

  var d3Append = proto.append
  var d3Insert = proto.insert

  proto.append = function (name) {
    if (typeof name != 'string') return d3Append.call(this, name)
    var parsed = parseName(name)
    return decorate(d3Append.call(this, parsed.tag), parsed)
  }

  proto.insert = function (name, before) {
    if (typeof name != 'string') return d3Insert.call(this, name, before)
    var parsed = parseName(name)
    return decorate(d3Insert.call(this, parsed.tag, before), parsed)
  }

  // The first child matching `name`, appended where there is none.
  proto.selectAppend = function (name) {
    var parsed = parseName(name)
    var create = d3.creator(parsed.tag)
    var sel = this.select(function () {
      return this.querySelector(name) || this.appendChild(create.apply(this, arguments))
    })
    return decorate(sel, parsed)
  }

  // One new `name` element a datum.
  proto.appendMany = function (name, data) {
    return this.selectAll(null).data(data).enter().append(name)
  }

  // Attributes from an object; camelCase keys are hyphenated (strokeWidth -> stroke-width) except
  // SVG's own camelCase attributes.
  var camelAttributes = new Set(['viewBox', 'preserveAspectRatio', 'refX', 'refY', 'markerWidth', 'markerHeight',
    'markerUnits', 'textLength', 'lengthAdjust', 'pathLength', 'gradientUnits', 'gradientTransform',
    'patternUnits', 'patternContentUnits', 'patternTransform', 'spreadMethod', 'stdDeviation', 'startOffset',
    'clipPathUnits', 'maskUnits', 'maskContentUnits', 'filterUnits', 'primitiveUnits', 'baseFrequency',
    'numOctaves', 'tableValues', 'kernelMatrix', 'attributeName', 'repeatCount', 'keyTimes', 'keySplines'])

  function hyphenate(key) {
    return key.replace(/([a-z\d])([A-Z])/g, '$1-$2').toLowerCase()
  }

  proto.at = function (name, value) {
    if (typeof name == 'object') {
      for (var key in name) this.attr(camelAttributes.has(key) ? key : hyphenate(key), name[key])
      return this
    }
    return arguments.length == 1 ? this.attr(name) : this.attr(name, value)
  }

  // Styles from an object; a number given for a length gets "px".
  var lengths = new Set(['top', 'left', 'bottom', 'right', 'width', 'height', 'min-width', 'max-width',
    'min-height', 'max-height', 'margin', 'margin-top', 'margin-left', 'margin-bottom', 'margin-right', 'padding',
    'padding-top', 'padding-left', 'padding-bottom', 'padding-right', 'border-width', 'border-top-width',
    'border-left-width', 'border-bottom-width', 'border-right-width', 'border-radius', 'font-size', 'line-height',
    'gap', 'stroke-width'])

  function withPx(value) {
    return typeof value == 'number' ? value + 'px' : value
  }

  function setStyle(sel, key, value) {
    var style = hyphenate(key)
    if (!lengths.has(style)) return sel.style(style, value)
    return sel.style(style, typeof value == 'function'
      ? function () { return withPx(value.apply(this, arguments)) }
      : withPx(value))
  }

  proto.st = function (name, value) {
    if (typeof name == 'object') {
      for (var key in name) setStyle(this, key, name[key])
      return this
    }
    return arguments.length == 1 ? this.style(name) : setStyle(this, name, value)
  }

  // [x, y] (or a function of the datum giving it) as an SVG transform, or a CSS one on HTML;
  // dim 0 or 1 moves along one axis by a number.
  proto.translate = function (xy, dim) {
    var node = this.node()
    if (!node) return this
    var isSvg = node.namespaceURI == 'http://www.w3.org/2000/svg'
    function point(p) {
      if (dim === 0) return [p, 0]
      if (dim === 1) return [0, p]
      return p
    }
    function transform(d, i) {
      var p = point(typeof xy == 'function' ? xy.call(this, d, i) : xy)
      return isSvg ? 'translate(' + p[0] + ',' + p[1] + ')' : 'translate(' + p[0] + 'px,' + p[1] + 'px)'
    }
    return isSvg ? this.attr('transform', transform) : this.style('transform', transform)
  }

  // Each element's parent, once.
  proto.parent = function () {
    var seen = new Set()
    return this.select(function () { return this.parentNode }).filter(function () {
      if (seen.has(this)) return false
      seen.add(this)
      return true
    })
  }

  // Groups in order of first appearance, each an array of its members with its key (a string).
  d3.nestBy = function (array, key) {
    return d3.groups(array, function (d, i) { return String(key(d, i)) }).map(function (group) {
      group[1].key = group[0]
      return group[1]
    })
  }

  d3.clamp = function (min, value, max) {
    return Math.max(min, Math.min(max, value))
  }

  // A chart's frame: margins (20 px each unless given), the size of `sel` less them, scales and
  // axes, and one layer per letter of `layers` (s: an svg's g, c: a canvas' 2d context, d: a div),
  // stacked in `sel`.
  d3.conventions = function (c) {
    c = c || {}
    var margin = c.margin || {}
    c.margin = {}
    ;['top', 'right', 'bottom', 'left'].forEach(function (side) {
      c.margin[side] = margin[side] == null ? 20 : margin[side]
    })
    c.sel = c.sel || c.parentSel || d3.select('body')
    var node = c.sel.node()
    c.totalWidth = c.totalWidth || (node && node.offsetWidth) || 960
    c.totalHeight = c.totalHeight || (node && node.offsetHeight) || 500
    c.width = c.width || c.totalWidth - c.margin.left - c.margin.right
    c.height = c.height || c.totalHeight - c.margin.top - c.margin.bottom
    c.totalWidth = c.width + c.margin.left + c.margin.right
    c.totalHeight = c.height + c.margin.top + c.margin.bottom
    c.sel.st({position: 'relative', width: c.totalWidth, height: c.totalHeight})

    c.x = c.x || d3.scaleLinear().range([0, c.width])
    c.y = c.y || d3.scaleLinear().range([c.height, 0])
    c.xAxis = c.xAxis || d3.axisBottom(c.x)
    c.yAxis = c.yAxis || d3.axisLeft(c.y)

    var stacked = !!c.layers
    c.layers = (c.layers || 's').split('').map(function (type) {
      if (type == 's') {
        var g = c.sel.append('svg')
          .st({position: stacked ? 'absolute' : ''})
          .at({width: c.totalWidth, height: c.totalHeight})
          .append('g')
          .translate([c.margin.left, c.margin.top])
        if (!c.svg) c.svg = g
        return g
      }
      if (type == 'c') {
        var scale = window.devicePixelRatio || 1
        var ctx = c.sel.append('canvas')
          .at({width: c.totalWidth * scale, height: c.totalHeight * scale})
          .st({position: 'absolute', width: c.totalWidth, height: c.totalHeight})
          .node().getContext('2d')
        ctx.scale(scale, scale)
        ctx.translate(c.margin.left, c.margin.top)
        return ctx
      }
      if (type == 'd') {
        return c.sel.append('div')
          .st({position: 'absolute', left: c.margin.left, top: c.margin.top, width: c.width, height: c.height})
      }
    })

    c.drawAxis = function (svg) {
      svg = svg || c.svg
      var xAxisSel = svg.append('g.x.axis').translate([0, c.height]).call(c.xAxis)
      var yAxisSel = svg.append('g.y.axis').call(c.yAxis)
      return {xAxisSel: xAxisSel, yAxisSel: yAxisSel}
    }
    return c
  }

  // Hovering an element of `sel` fills `tooltipSel` (default .tooltip) with one line a function of
  // `fieldFns` (default: the datum's plain fields) and moves it beside the pointer.
  d3.attachTooltip = function (sel, tooltipSel, fieldFns) {
    if (!sel.size()) return
    tooltipSel = tooltipSel || d3.select('.tooltip')
    if (!fieldFns) {
      var datum = sel.datum() || {}
      fieldFns = Object.keys(datum).filter(function (key) { return typeof datum[key] != 'object' })
        .map(function (key) { return function (d) { return key + ': <b>' + d[key] + '</b>' } })
    }
    sel
      .on('mouseover.attachTooltip', function (ev, d) {
        tooltipSel.classed('tooltip-hidden', false).html('')
          .appendMany('div', fieldFns).html(function (fn) { return fn(d) })
        d3.select(this).classed('tooltipped', true)
      })
      .on('mousemove.attachTooltip', function (ev) {
        if (!tooltipSel.size()) return
        var box = tooltipSel.node().getBoundingClientRect()
        var left = d3.clamp(20, ev.clientX - box.width / 2, window.innerWidth - box.width - 20)
        var top = window.innerHeight > ev.clientY + 20 + box.height ? ev.clientY + 20 : ev.clientY - box.height - 20
        tooltipSel.st({left: left, top: top})
      })
      .on('mouseout.attachTooltip', function () {
        tooltipSel.classed('tooltip-hidden', true)
        d3.selectAll('.tooltipped').classed('tooltipped', false)
      })
  }
})()
