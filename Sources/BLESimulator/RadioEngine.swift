import BLEHCI
import BLETransport
import Foundation

/// How the radio keeps time.
public enum Pacing: Sendable {
    /// Follow the clock, waking at most once per `batch` of virtual time (reports within a batch
    /// go out together, as a controller's buffer would send them).
    case clock(batch: Duration)
    /// Never wait: the clock is a `FreeRunningClock`; virtual time stands still while no host is connected.
    case asFastAsPossible
}

/// The virtual air: advertising events in time order, each heard (or not) by every scanning
/// gateway according to the channel model, and encoded as the controller's report events.
///
/// A value type driven by `Simulator.run()`; the I/O is the gateway nodes'.
struct RadioEngine {
    let scenario: Scenario
    let random: SimRandom
    let nodes: [GatewayNode]
    /// Per emitter: next event time, event counter, cached advertising data and PDU type.
    private var nextTime: [Double]
    private var eventCount: [UInt64]
    private var advData: [[UInt8]]
    private var pdu: [UInt8]
    /// Per phone: the address period and its resolvable private address, computed once per period.
    private var addressEpoch: [Int64]
    private var rotatingAddress: [BDAddress]
    /// Link offsets, flattened [gateway][emitter].
    private var linkOffset: [[Double]]
    /// A binary min-heap of (time, emitter).
    private var heap: [(Double, Int32)] = []
    /// Per gateway: reports encoded but not yet handed over, and the duplicate filter.
    private var pending: [[UInt8]]
    private var pendingCount: [Int]
    private var pendingGeneration: [UInt64]
    private var seen: [Set<UInt64>]
    private var seenKey: [(generation: UInt64, period: Int)]
    /// The spec's advDelay: 0–10 ms of pseudo-random delay added to every advertising event
    /// (Core v5.4, Vol 6, Part B, §4.4.2.2.1).
    static let advDelayMax = 0.010

    init(scenario: Scenario, random: SimRandom, nodes: [GatewayNode]) {
        self.scenario = scenario
        self.random = random
        self.nodes = nodes
        let n = scenario.emitters.count
        nextTime = [Double](repeating: 0, count: n)
        eventCount = [UInt64](repeating: 0, count: n)
        advData = scenario.emitters.map { $0.frame.advertisingData() }
        pdu = scenario.emitters.map { $0.frame.pduType(hasScanResponse: $0.scanResponse != nil) }
        addressEpoch = [Int64](repeating: .min, count: n)
        rotatingAddress = scenario.emitters.map(\.address)
        linkOffset = scenario.gateways.map { g in
            scenario.emitters.map { e in scenario.radio.linkOffsets[g.id]?[e.name] ?? 0 }
        }
        pending = Array(repeating: [], count: nodes.count)
        pendingCount = Array(repeating: 0, count: nodes.count)
        pendingGeneration = Array(repeating: 0, count: nodes.count)
        seen = Array(repeating: [], count: nodes.count)
        seenKey = Array(repeating: (0, 0), count: nodes.count)
        heap.reserveCapacity(n)
        // Devices were switched on at random moments before the run: the first event falls
        // uniformly within one interval, so a crowd does not advertise in lock-step.
        for i in 0..<n {
            let t = random.uniform(RandomStream.advDelay, UInt64(i), .max) * scenario.emitters[i].interval
            nextTime[i] = t
            push((t, Int32(i)))
        }
    }

    var nextEventTime: Double { heap.first?.0 ?? .infinity }

    /// Emitters without power (`peripheral_off`): their advertising events pass unheard.
    private(set) var unpowered: Set<Int> = []

    mutating func setPowered(emitter i: Int, _ on: Bool) {
        if on { unpowered.remove(i) } else { unpowered.insert(i) }
    }

    // MARK: Heap

    private mutating func push(_ e: (Double, Int32)) {
        heap.append(e)
        var i = heap.count - 1
        while i > 0 {
            let p = (i - 1) / 2
            if heap[p].0 <= heap[i].0 { break }
            heap.swapAt(p, i)
            i = p
        }
    }

    /// Replaces the top with `e` and sifts it down (the common case: an emitter's next event).
    private mutating func replaceTop(_ e: (Double, Int32)) {
        heap[0] = e
        var i = 0
        let n = heap.count
        while true {
            let l = 2 * i + 1
            if l >= n { break }
            var c = l
            if l + 1 < n && heap[l + 1].0 < heap[l].0 { c = l + 1 }
            if heap[i].0 <= heap[c].0 { break }
            heap.swapAt(i, c)
            i = c
        }
    }

    // MARK: Air

    /// Runs every advertising event up to and including `until`, given what each gateway is doing.
    /// Returns the number of events.
    mutating func advance(until: Double, listening snapshot: [GatewayNode.Listening]) -> Int {
        var listening = snapshot
        var events = 0
        let radio = scenario.radio
        let anyone = listening.contains { $0.deliver || $0.connectTo != nil || $0.advertisingConnectable }
        while let top = heap.first, top.0 <= until {
            let (t, idx32) = top
            let i = Int(idx32)
            let e = scenario.emitters[i]
            let k = eventCount[i]
            eventCount[i] = k &+ 1
            let delay = random.uniform(RandomStream.advDelay, UInt64(i), k) * Self.advDelayMax
            replaceTop((t + e.interval + delay, idx32))
            events += 1
            guard anyone, !unpowered.contains(i) else { continue }
            if e.frame.isDynamic {
                advData[i] = e.frame.advertisingData(eventCount: UInt32(truncatingIfNeeded: k), uptimeSeconds: t)
            }
            let pos = e.motion.position(at: t)
            // A phone advertises from its current resolvable private address, a random address.
            var address = e.address
            var addressType = e.addressType
            if let phone = e.phone {
                let epoch = phone.epoch(at: t)
                if epoch != addressEpoch[i] {
                    addressEpoch[i] = epoch
                    rotatingAddress[i] = phone.address(epoch: epoch, identity: e.address)
                }
                address = rotatingAddress[i]
                addressType = 0x01
            }
            for g in 0..<nodes.count {
                let l = listening[g]
                let initiating =
                    pdu[i] == SimEvents.LegacyEventType.advInd
                    && l.connectTo?.targets(address, type: addressType) == true
                // Scanning_Filter_Policy 0x01/0x03: only advertisers on the Filter Accept List are reported.
                let reportable =
                    l.deliver && Self.hears(l.scan, at: t)
                    && (l.scan.filterPolicy & 0x01 == 0
                        || l.acceptList.contains(SimAcceptListEntry(addressType: addressType, address: address)))
                // A phone whose user pairs connects to a gateway it hears advertising for enrolment.
                let pairing = l.advertisingConnectable && e.phone?.pairing != nil
                guard initiating || reportable || pairing else { continue }
                let key = UInt64(i) << 8 | UInt64(g)
                if random.uniform(RandomStream.loss, key, k) < radio.lossProbability { continue }
                let gw = scenario.gateways[g]
                let d = pos.distance(to: gw.position)
                let rssi =
                    radio.meanRSSI(rssiAt1m: e.rssiAt1m, distance: d) + radio.shadowingSigmaDB
                    * random.gaussian(RandomStream.shadowing, key, k) + linkOffset[g][i] + gw.rxOffsetDB
                if rssi < radio.sensitivityDBm { continue }
                if pairing, let phone = e.phone {
                    // The phone's keys for this pairing: a function of the phone and the advertising session, so
                    // a run repeats.
                    let seed = Array(e.name.utf8) + withUnsafeBytes(of: l.advertisingSession.littleEndian, Array.init)
                    if nodes[g].acceptCentral(phone: phone, identity: e.address, address: address, seed: seed, now: t) {
                        listening[g].advertisingConnectable = false
                    }
                    if !reportable { continue }
                }
                if initiating {
                    // The initiator answers the ADV_IND with CONNECT_IND (Vol 6, Part B, §4.5): the link is up.
                    // The initiator listens continuously here; its LE_Scan_Window is not modelled.
                    let name: String
                    if case .named(let n, _) = e.frame { name = n } else { name = e.name }
                    if nodes[g].establish(
                        peer: address, addressType: addressType, deviceName: name, phase: Double(i),
                        behaviour: e.link, now: t)
                    {
                        listening[g].connectTo = nil
                    }
                    if !reportable { continue }
                }
                if l.scan.filterDuplicates != 0 && isDuplicate(g, l.scan, t, address: address, scanResponse: false) {
                    continue
                }
                emit(
                    g, l.scan, pdu: pdu[i], (address, addressType), data: advData[i], rssi: rssi, scanResponse: false)
                // Active scanning: a scannable PDU draws a SCAN_REQ, answered 150 µs later with
                // SCAN_RSP (Vol 6, Part B, §4.4.3.2), which has its own chance of loss.
                if l.scan.active, let rsp = e.scanResponse, pdu[i] != SimEvents.LegacyEventType.advNonconnInd,
                    random.uniform(RandomStream.scanResponseLoss, key, k) >= radio.lossProbability
                {
                    if l.scan.filterDuplicates != 0 && isDuplicate(g, l.scan, t, address: address, scanResponse: true) {
                        continue
                    }
                    let r2 =
                        radio.meanRSSI(rssiAt1m: e.rssiAt1m, distance: d) + radio.shadowingSigmaDB
                        * random.gaussian(RandomStream.scanResponseShadowing, key, k) + linkOffset[g][i] + gw.rxOffsetDB
                    emit(g, l.scan, pdu: pdu[i], (address, addressType), data: rsp, rssi: r2, scanResponse: true)
                }
            }
        }
        return events
    }

    /// Whether a receiver with this scan state is listening at `t`: inside a scan window and,
    /// for an extended scan with Duration/Period, inside the scanning part of the period.
    static func hears(_ s: ScanState, at t: Double) -> Bool {
        let since = t - s.startedAt.seconds
        guard since >= 0 else { return false }
        if let duration = s.duration?.seconds {
            if let period = s.period?.seconds {
                if since.truncatingRemainder(dividingBy: period) >= duration { return false }
            } else if since >= duration {
                return false
            }
        }
        let iv = s.interval.seconds
        let w = s.window.seconds
        if w >= iv { return true }
        return since - (since / iv).rounded(.down) * iv < w
    }

    /// The controller's duplicate filter (§7.8.11, §7.8.65): one report per advertiser (and one
    /// scan response) while scanning stays enabled, or per period with Filter_Duplicates 0x02.
    private mutating func isDuplicate(_ g: Int, _ s: ScanState, _ t: Double, address: BDAddress, scanResponse: Bool)
        -> Bool
    {
        var period = 0
        if s.filterDuplicates == 2, let p = s.period?.seconds { period = Int((t - s.startedAt.seconds) / p) }
        if seenKey[g].generation != s.generation || seenKey[g].period != period {
            seen[g].removeAll(keepingCapacity: true)
            seenKey[g] = (s.generation, period)
        }
        return !seen[g].insert(address.rawValue << 1 | (scanResponse ? 1 : 0)).inserted
    }

    private mutating func emit(
        _ g: Int, _ s: ScanState, pdu: UInt8, _ e: (address: BDAddress, addressType: UInt8), data: [UInt8],
        rssi: Double, scanResponse: Bool
    ) {
        if pendingGeneration[g] != s.generation && pendingCount[g] > 0 { _ = flush(g, dropIfFull: true) }
        pendingGeneration[g] = s.generation
        let r = Int8(clamping: Int(rssi.rounded()))
        if s.extendedReports {
            let type: UInt16
            switch (pdu, scanResponse) {
            case (SimEvents.LegacyEventType.advInd, false): type = SimEvents.ExtendedEventType.advInd
            case (SimEvents.LegacyEventType.advInd, true): type = SimEvents.ExtendedEventType.scanRspToAdvInd
            case (SimEvents.LegacyEventType.advScanInd, false): type = SimEvents.ExtendedEventType.advScanInd
            case (_, true): type = SimEvents.ExtendedEventType.scanRspToAdvScanInd
            default: type = SimEvents.ExtendedEventType.advNonconnInd
            }
            SimEvents.appendExtendedReport(
                to: &pending[g], eventType: type, addressType: e.addressType, address: e.address, data: data, rssi: r)
        } else {
            SimEvents.appendLegacyReport(
                to: &pending[g], eventType: scanResponse ? SimEvents.LegacyEventType.scanRsp : pdu,
                addressType: e.addressType, address: e.address, data: data, rssi: r)
        }
        pendingCount[g] += 1
    }

    var pendingBytes: Int { pending.reduce(0) { $0 + $1.count } }

    /// Hands gateway `g`'s encoded reports to its node. False if the host is behind and
    /// `dropIfFull` is off: the caller waits and tries again.
    mutating func flush(_ g: Int, dropIfFull: Bool) -> Bool {
        guard pendingCount[g] > 0 else { return true }
        guard
            nodes[g].deliver(
                pending[g], reports: pendingCount[g], generation: pendingGeneration[g], dropIfFull: dropIfFull)
        else { return false }
        pending[g].removeAll(keepingCapacity: true)
        pendingCount[g] = 0
        return true
    }
}
