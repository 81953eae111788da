use tch::Tensor;

fn main() {
    let t = Tensor::from_slice(&[1.1f32, 2.1, 3.1]);
    t.print();
}
