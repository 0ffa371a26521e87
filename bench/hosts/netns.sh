# bench/hosts/netns.sh: sourced by the scripts here. Two "hosts" for one run: network namespaces
# $NS_A and $NS_B joined by the veth pair $VETH_A/$VETH_B, addressed $NET.1/24 and $NET.2/24,
# loopback and both ends up. The caller names them and removes them on exit (`ip netns del`
# takes the pair with it).
two_hosts_up() {
    ip netns add "$NS_A"
    ip netns add "$NS_B"
    ip link add "$VETH_A" type veth peer name "$VETH_B"
    ip link set "$VETH_A" netns "$NS_A"
    ip link set "$VETH_B" netns "$NS_B"
    ip -n "$NS_A" addr add "$NET.1/24" dev "$VETH_A"
    ip -n "$NS_B" addr add "$NET.2/24" dev "$VETH_B"
    for ns in "$NS_A" "$NS_B"; do ip -n "$ns" link set lo up; done
    ip -n "$NS_A" link set "$VETH_A" up
    ip -n "$NS_B" link set "$VETH_B" up
}
