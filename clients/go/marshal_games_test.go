package pathd

import (
	"encoding/json"
	"testing"
)

func TestPathRequestLeavesGoalOutForGoalsAndFlee(t *testing.T) {
	for _, c := range []struct {
		q    PathRequest
		want string
	}{
		{PathRequest{Start: Point{0, 0}, Goal: Point{4, 0}}, `{"start":[0,0],"goal":[4,0]}`},
		{PathRequest{Start: Point{0, 0}, Goals: []Point{{4, 0}, {1, 2}}}, `{"start":[0,0],"goals":[[4,0],[1,2]]}`},
		{PathRequest{Start: Point{0, 0}, Flee: &Flee{From: Point{1, 0}, Distance: 3}}, `{"start":[0,0],"flee":{"from":[1,0],"distance":3}}`},
	} {
		b, err := json.Marshal(c.q)
		if err != nil || string(b) != c.want {
			t.Errorf("got %s (%v), want %s", b, err, c.want)
		}
	}
}
